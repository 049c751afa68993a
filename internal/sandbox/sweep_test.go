package sandbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"

	"github.com/runmill/verify/internal/mountinfo"
	"github.com/runmill/verify/internal/sandbox"
	"github.com/runmill/verify/internal/sandbox/sandboxtest"
)

// helperEnv makes the test binary a stand-in runmill that starts a long run
// and waits to be killed: the crash Sweep exists for.
const helperEnv = "RUNMILL_SANDBOX_TEST_HELPER"

func helperMain() int {
	var id, address, state, report, tag string
	fmt.Sscan(os.Getenv(helperEnv), &id, &address, &state, &report, &tag)
	if address == "-" {
		address = os.Getenv("RUNMILL_CONTAINERD_ADDRESS")
	}
	s, err := sandbox.Connect(context.Background(), sandbox.Options{Address: address, StateDir: state})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if os.Getenv(hogEnv) != "" {
		go hog(report)
	}
	_, err = s.Run(context.Background(), sandbox.Spec{
		ID:         id,
		Command:    "setsid sleep " + tag + "0 & sleep " + tag + "1 & echo started > " + report + "; wait",
		ReportFile: report,
		Timeout:    5 * time.Minute,
	})
	fmt.Fprintln(os.Stderr, "run returned:", err)
	return 1
}

// TestSweepAfterKill: runmill is killed -9 in the middle of a run; the next
// runmill's Sweep kills the task (daemonized child included), deletes the
// container and the dead process's FIFOs, and reports what it removed.
func TestSweepAfterKill(t *testing.T) {
	s := needSandbox(t)
	id := killedRun(t, s.Address(), stateDir)
	sweep(t, s, id, "313.4")
}

// TestSweepAfterKillWithPrivateDaemon: the killed runmill had started its
// own containerd, which dies with it; the next runmill starts a new private
// containerd on the same state, which finds the orphaned task, and sweeps it.
func TestSweepAfterKillWithPrivateDaemon(t *testing.T) {
	state := privateState(t)
	id := killedRun(t, "-", state)
	sweep(t, nextRunmill(t, state), id, "313.4")
}

// privateState is a state directory of its own for a stand-in runmill
// that starts its private containerd there; skipped where the sandbox
// under test uses a shared one.
func privateState(t *testing.T) string {
	t.Helper()
	if !needSandbox(t).Private() {
		t.Skip("the sandbox under test uses a shared containerd")
	}
	// A short path: the private daemon's socket lives under it.
	state, err := os.MkdirTemp("", "rmsb-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(state) })
	return state
}

// nextRunmill is the next runmill's sandbox on state: a new private
// containerd on the killed one's state, closed when the test ends.
func nextRunmill(t *testing.T, state string) *sandbox.Sandbox {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	next, err := sandbox.Connect(ctx, sandbox.Options{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := next.Close(); err != nil {
			t.Error(err)
		}
	})
	return next
}

// killedRun starts a run in a stand-in runmill, kills that process with
// SIGKILL once the task runs, and returns the run's container id.
func killedRun(t *testing.T, address, state string) string {
	t.Helper()
	id, helper := helperRun(t, address, state, "313.4")
	helper.Process.Kill()
	helper.Wait()
	return id
}

// helperRun starts a run in a stand-in runmill and returns once its task's
// two sleepers (sleep <tag>0, daemonized, and sleep <tag>1) are seen
// running, so their absence later means something.
func helperRun(t *testing.T, address, state, tag string, env ...string) (string, *exec.Cmd) {
	t.Helper()
	id := fmt.Sprintf("sweep-test-%d", time.Now().UnixNano())
	report := filepath.Join(t.TempDir(), "report")
	os.WriteFile(report, nil, 0o600)
	helper := exec.Command(os.Args[0], "-test.run=^$")
	helper.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %s %s %s", helperEnv, id, address, state, report, tag))
	helper.Env = append(helper.Env, env...)
	helper.Stderr = os.Stderr
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, _ := os.ReadFile(report); strings.Contains(string(b), "started") && sleeperRuns(tag+"0") && sleeperRuns(tag+"1") {
			return id, helper
		}
		if time.Now().After(deadline) {
			helper.Process.Kill()
			helper.Wait()
			t.Fatal("the helper's task never ran")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func sweep(t *testing.T, s *sandbox.Sandbox, id, tag string) {
	t.Helper()
	removed, err := s.Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("removed %q", removed)
	if !slices.Contains(removed, "container "+id) {
		t.Errorf("sweep did not report container %s: %q", id, removed)
	}
	if !slices.ContainsFunc(removed, func(r string) bool { return strings.HasPrefix(r, "directory ") && strings.Contains(r, "/fifo/") }) {
		t.Errorf("sweep did not remove the dead process's FIFO directory: %q", removed)
	}
	assertNoSleeper(t, tag+"0")
	assertNoSleeper(t, tag+"1")
	assertNoProcesses(t, id)
	assertNoDeadRunCgroups(t, s)
	again, err := s.Sweep(context.Background())
	if err != nil || len(again) != 0 {
		t.Errorf("second sweep: %q, %v", again, err)
	}
}

// assertNoDeadRunCgroups: no run parent cgroup of a dead runmill is left
// beside s's own.
func assertNoDeadRunCgroups(t *testing.T, s *sandbox.Sandbox) {
	t.Helper()
	ns, _ := os.Readlink("/proc/self/ns/pid")
	for _, dir := range sandbox.RunCgroupsParent(s) {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			f := strings.Split(strings.TrimPrefix(e.Name(), "runmill-run-"), "-")
			if !strings.HasPrefix(e.Name(), "runmill-run-") || len(f) != 4 || "pid:["+f[0]+"]" != ns {
				continue
			}
			if start, err := procfsStart(f[1]); err != nil || start != f[2] {
				t.Errorf("the sweep left the cgroup %s of a dead run", filepath.Join(dir, e.Name()))
			}
		}
	}
}

func sleeperRuns(arg string) bool {
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range paths {
		if b, _ := os.ReadFile(p); string(b) == "sleep\x00"+arg+"\x00" {
			return true
		}
	}
	return false
}

// TestSweepReapsWhatContainerdForgot (issue #23 Why 4): runmill is killed
// mid-run and containerd then loses the container records while the tasks
// live on (a sweep's Delete dropped them when it could not look the task
// up): the shim, the keeper's `runc init` and both tmpfs roots remain, and
// nothing in containerd names them. Before, every later Sweep failed on
// the mounted bundles (RM-SANDBOX-006, for good). Sweep now finds them by
// their bundles, which name this state directory and a dead runmill, and
// removes processes, shim, mounts, cgroups and bundles.
func TestSweepReapsWhatContainerdForgot(t *testing.T) {
	s := needSandbox(t)
	id, helper := helperRun(t, s.Address(), stateDir, "313.7")
	helper.Process.Kill()
	helper.Wait()
	left := sandboxtest.LeftBy(t, helper.Process.Pid, id)
	checkLeft(t, left)
	sandboxtest.ForgetContainers(t, s.Address(), left.IDs)
	reaped(t, s, left, "313.7")
}

// TestSweepReapsStrayShimsOfPrivateDaemon: the same with a private
// containerd, which dies with the killed runmill; a containerd that then
// comes back on its state without the container records deletes their
// bundles (unmounting the roots) but leaves the shim and its processes
// running. The next runmill's Sweep finds that shim by its address (its
// private containerd's socket) and removes it, its processes and cgroups.
func TestSweepReapsStrayShimsOfPrivateDaemon(t *testing.T) {
	state := privateState(t)
	id, helper := helperRun(t, "-", state, "313.8")
	helper.Process.Kill()
	helper.Wait()
	left := sandboxtest.LeftBy(t, helper.Process.Pid, id)
	checkLeft(t, left)
	// The killed runmill's containerd, started again on its own
	// configuration to forget the containers, then stopped.
	dir := filepath.Join(state, "sandbox", "containerd")
	bin, path, err := sandbox.DaemonBinary()
	if err != nil {
		t.Fatal(err)
	}
	daemon := exec.Command(bin, "--config", filepath.Join(dir, "config.toml"))
	daemon.Env = []string{"PATH=" + path}
	daemon.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := containerd.New(filepath.Join(dir, "containerd.sock"), containerd.WithTimeout(time.Second)); err == nil {
			_, verr := c.Version(context.Background())
			c.Close()
			if verr == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			daemon.Process.Kill()
			daemon.Wait()
			t.Fatal("containerd did not come back")
		}
	}
	sandboxtest.ForgetContainers(t, filepath.Join(dir, "containerd.sock"), left.IDs)
	daemon.Process.Signal(syscall.SIGTERM)
	daemon.Wait()
	next := nextRunmill(t, state)
	// Still there once the new containerd has dealt with the bundles: the
	// test is not vacuous.
	if alive := slices.ContainsFunc(left.Remaining(), func(r string) bool { return strings.HasPrefix(r, "process ") }); !alive {
		t.Fatalf("nothing of the killed run lives on after its containerd forgot it: %q", left.Remaining())
	}
	reaped(t, next, left, "313.8")
}

// checkLeft is the precondition of a reaping test: the killed runmill left
// its shim, a process under it (the keeper's runc init), and a mounted
// root, so that their absence afterwards means something.
func checkLeft(t *testing.T, left sandboxtest.Leftovers) {
	t.Helper()
	rem := left.Remaining()
	if len(left.Shims) == 0 || len(left.Procs) == 0 || !slices.ContainsFunc(rem, func(r string) bool { return strings.HasPrefix(r, "mount ") }) {
		t.Fatalf("the killed runmill left no shim, shim process or mounted root to sweep: %+v %q", left, rem)
	}
	t.Logf("left by the killed runmill: %q", rem)
}

// reaped sweeps and checks that nothing of the leftovers remains, that the
// sweep said what it removed, and that a second sweep finds nothing.
func reaped(t *testing.T, s *sandbox.Sandbox, left sandboxtest.Leftovers, tag string) {
	t.Helper()
	start := time.Now()
	removed, err := s.Sweep(context.Background())
	if err != nil {
		t.Fatalf("Sweep: %v (removed %q)", err, removed)
	}
	t.Logf("the sweep took %v and removed %q", time.Since(start), removed)
	for _, sh := range left.Shims {
		if !slices.Contains(removed, fmt.Sprintf("shim %d", sh)) {
			t.Errorf("the sweep does not report shim %d: %q", sh, removed)
		}
	}
	if rem := left.Remaining(); len(rem) > 0 {
		t.Errorf("left after the sweep: %q", rem)
	}
	assertNoSleeper(t, tag+"0")
	assertNoSleeper(t, tag+"1")
	again, err := s.Sweep(context.Background())
	if err != nil || len(again) != 0 {
		t.Errorf("second sweep: %q, %v", again, err)
	}
}

// TestSweepSettlesLeftBundles: task bundles of this state directory whose
// container containerd no longer knows, as a task deleted under load left
// them (issue #23: every later Sweep then failed, "its rootfs holds files;
// left in place", RM-SANDBOX-006), are unmounted and removed by the next
// Sweep — a root still mounted and holding runc's mount points, a root no
// longer mounted that still holds them — whatever a snapshot of the mount
// table would have said. A root holding a file with content is not
// runc's: it is left in place and named. Another state directory's
// mounted bundle is never touched and does not fail the sweep.
func TestSweepSettlesLeftBundles(t *testing.T) {
	s := needSandbox(t)
	dir := sandbox.BundleDir(s)
	if dir == "" {
		t.Skip("the sandbox under test uses a shared containerd: its bundles are not this test's to plant")
	}
	mine := sandbox.TaskAnnotations(s)
	other := maps.Clone(mine)
	other["dev.runmill.sandbox/state"] = "/nonexistent/another-state-dir"
	// bundle makes a task bundle with a spec annotated as annotations say,
	// its root mounted (a tmpfs) or not, holding runc's mount points and,
	// with content, a file that is no mount point.
	bundle := func(name string, annotations map[string]string, mount bool, content string) string {
		t.Helper()
		b := filepath.Join(dir, fmt.Sprintf("settle-%s-%d", name, time.Now().UnixNano()))
		rootfs := filepath.Join(b, "rootfs")
		if err := os.MkdirAll(rootfs, 0o755); err != nil {
			t.Fatal(err)
		}
		spec, _ := json.Marshal(map[string]any{"ociVersion": "1.0.2", "annotations": annotations})
		if err := os.WriteFile(filepath.Join(b, "config.json"), spec, 0o600); err != nil {
			t.Fatal(err)
		}
		if mount {
			if err := syscall.Mount("tmpfs", rootfs, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size=1m"); err != nil {
				t.Fatal(err)
			}
		}
		t.Cleanup(func() { mountinfo.UnmountUnder(b); os.RemoveAll(b) })
		for _, d := range []string{"etc", "usr", ".runmill"} {
			os.Mkdir(filepath.Join(rootfs, d), 0o755)
		}
		for _, f := range []string{"etc/passwd", "etc/hosts", ".runmill/init"} {
			os.WriteFile(filepath.Join(rootfs, f), nil, 0o644)
		}
		if content != "" {
			os.WriteFile(filepath.Join(rootfs, "usr", "data"), []byte(content), 0o644)
		}
		return b
	}
	mounted := bundle("mounted", mine, true, "")
	unmounted := bundle("unmounted", mine, false, "")
	others := bundle("another-state-dir", other, true, "")

	removed, err := s.Sweep(context.Background())
	if err != nil {
		t.Fatalf("Sweep: %v (removed %q)", err, removed)
	}
	t.Logf("removed %q", removed)
	for _, want := range []string{"mount " + filepath.Join(mounted, "rootfs"), "task bundle " + mounted, "task bundle " + unmounted} {
		if !slices.Contains(removed, want) {
			t.Errorf("the sweep does not report %q: %q", want, removed)
		}
	}
	for _, b := range []string{mounted, unmounted} {
		if _, err := os.Lstat(b); err == nil {
			t.Errorf("%s is still there", b)
		}
	}
	if left, _ := mountinfo.Under(others); len(left) != 1 {
		t.Errorf("another state directory's bundle was touched: mounts %q", left)
	}
	if _, err := os.Stat(filepath.Join(others, "rootfs", "etc", "passwd")); err != nil {
		t.Errorf("another state directory's root lost its files: %v", err)
	}

	// Content no runc mount point has: named, left, the sweep failing.
	defer func(d time.Duration) { sandbox.SetReapWait(d) }(sandbox.SetReapWait(200 * time.Millisecond))
	data := bundle("data", mine, false, "not runc's")
	removed, err = s.Sweep(context.Background())
	if err == nil || !strings.Contains(err.Error(), "its rootfs holds files (usr/data: regular file, 10 bytes)") {
		t.Errorf("Sweep over a root holding data: %v (removed %q); want it named and left", err, removed)
	}
	if _, err := os.Stat(filepath.Join(data, "rootfs", "usr", "data")); err != nil {
		t.Errorf("the file with content was removed: %v", err)
	}
}
