package engine_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/internal/sandbox/sandboxtest"
	"github.com/runmill/verify/pkg/evidence"
)

// sleepRepo is a repository with one report check that, at the candidate,
// first sleeps for the seconds the file "sleep" names (a number unique to
// the test, so the test finds its own sleeper in /proc): a check that is
// running when the test acts on runmill.
func sleepRepo(t *testing.T, seconds string) (r *gittest.Repo, base, slow string) {
	t.Helper()
	r = gittest.New(t)
	r.Write(".runmill/checks.yaml", "checks:\n  - id: unit\n    run: \"if [ -f sleep ]; then sleep $(cat sleep); fi; printf '1..1\\\\nok 1 a\\\\n' > reports/r.tap\"\n"+
		"    report: {path: reports/r.tap, format: tap}\n    timeout: 600s\n")
	base = r.Commit("base")
	r.Write("sleep", seconds+"\n")
	return r, base, r.Commit("a check that sleeps")
}

// runmillProcess starts the runmill binary with args; its stderr is the
// returned buffer.
func runmillProcess(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(runmillCLI(t), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd, &stderr
}

// waitSleeper returns the pid of the check's `sleep seconds` once it runs,
// failing the test when runmill exits first or nothing runs within a
// minute (a runmill stuck before the check ran).
func waitSleeper(t *testing.T, cmd *exec.Cmd, stderr *bytes.Buffer, seconds string) int {
	t.Helper()
	exited := make(chan struct{})
	go func() {
		for cmd.ProcessState == nil {
			if p, _ := os.FindProcess(cmd.Process.Pid); p.Signal(syscall.Signal(0)) != nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		close(exited)
	}()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, p := range paths {
			if b, _ := os.ReadFile(p); string(b) == "sleep\x00"+seconds+"\x00" {
				pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
				return pid
			}
		}
		select {
		case <-exited:
			t.Fatalf("runmill ended before its check ran:\n%s", stderr)
		default:
		}
	}
	t.Fatalf("the check never ran (runmill stuck?):\n%s", stderr)
	return 0
}

func keyFile(t *testing.T) string {
	t.Helper()
	pem, _, _ := newTestKey(t)
	p := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(p, pem, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestKilledRunSweptByNextRun (issue #23 Why 4): the runmill binary is
// killed with SIGKILL while its check sleeps; its shim, the keeper's `runc
// init`, the tasks' mounted roots and cgroups are left (checked: the test
// cannot pass for want of leftovers). The next `verify` on the same state
// directory removes every one — process gone, mount gone, cgroup gone —
// and reaches a verdict. The second case is the bricked state dir of the
// issue: containerd had also lost the container records (a sweep's Delete
// dropped them while the tasks lived), so nothing in containerd named the
// leftovers and every later run failed with RM-SANDBOX-006.
func TestKilledRunSweptByNextRun(t *testing.T) {
	if containerdAddress == "" {
		t.Skip(noSandbox)
	}
	r, base, slow := sleepRepo(t, "300.2301")
	key := keyFile(t)
	for _, forgotten := range []bool{false, true} {
		name := "killed"
		if forgotten {
			name = "killed and forgotten by containerd"
		}
		t.Run(name, func(t *testing.T) {
			state := t.TempDir()
			args := []string{"--repo", r.Dir, "--out", state, "--containerd-address", containerdAddress, "--signing-key", key, "--no-github"}
			cmd, stderr := runmillProcess(t, append([]string{"verify", "--base", base, "--candidate", slow}, args...)...)
			check := sandboxtest.TaskOf(waitSleeper(t, cmd, stderr, "300.2301"))
			cmd.Process.Kill()
			cmd.Wait()
			left := sandboxtest.LeftBy(t, cmd.Process.Pid, check)
			rem := left.Remaining()
			if check == "" || len(left.Shims) == 0 || len(left.Procs) == 0 || !strings.Contains(strings.Join(rem, "\n"), "mount ") {
				t.Fatalf("the killed runmill left no shim, runc init or mounted root (check task %q): %+v %q", check, left, rem)
			}
			t.Logf("left by the killed runmill: %q", rem)
			if forgotten {
				sandboxtest.ForgetContainers(t, containerdAddress, left.IDs)
			}
			next, nextErr := runmillProcess(t, append([]string{"verify", "--base", base, "--candidate", base}, args...)...)
			if err := next.Wait(); err != nil {
				t.Fatalf("the next run: %v\n%s", err, nextErr)
			}
			if rem := left.Remaining(); len(rem) > 0 {
				t.Errorf("left after the next run's sweep: %q\n%s", rem, nextErr)
			}
			if !strings.Contains(nextErr.String(), "swept a leftover of an earlier run: ") {
				t.Errorf("the next run does not say what it swept:\n%s", nextErr)
			}
			if bundles, _ := filepath.Glob(filepath.Join(state, "runs", "*", "evidence.json")); len(bundles) != 1 {
				t.Errorf("want the next run's signed bundle, found %q", bundles)
			}
		})
	}
}

// TestSIGTERMObeyedWithFIFOsPlanted (issue #23 Build 3): FIFOs planted
// where runmill writes its private containerd's configuration and log in
// the state directory once held it in open(2), deaf to SIGTERM, before its
// first check ran. Now the run goes on to its check, and SIGTERM while the
// check sleeps ends the run by itself (not by the grace backstop): exit 3,
// the check's processes gone, and a terminal statement whose events say
// the run was cancelled, by what, and that it ended without a verdict.
func TestSIGTERMObeyedWithFIFOsPlanted(t *testing.T) {
	if containerdAddress == "" {
		t.Skip(noSandbox)
	}
	r, base, slow := sleepRepo(t, "300.2302")
	// A short path: the private containerd's socket lives under it.
	state, err := os.MkdirTemp("", "rmsig-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(state)
	daemonDir := filepath.Join(state, "sandbox", "sandbox", "containerd")
	if err := os.MkdirAll(daemonDir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"config.toml", "containerd.log"} {
		if err := syscall.Mkfifo(filepath.Join(daemonDir, name), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// No --containerd-address: the private containerd, under the state dir.
	cmd, stderr := runmillProcess(t, "verify", "--repo", r.Dir, "--base", base, "--candidate", slow, "--out", state,
		"--signing-key", keyFile(t), "--no-github")
	sleeper := waitSleeper(t, cmd, stderr, "300.2302")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("after SIGTERM: %v, want exit 3\n%s", err, stderr)
	}
	if strings.Contains(stderr.String(), "exiting now") {
		t.Errorf("runmill did not end by itself; the grace backstop ended it:\n%s", stderr)
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(sleeper)); err == nil {
		if b, _ := os.ReadFile("/proc/" + strconv.Itoa(sleeper) + "/cmdline"); len(b) > 0 {
			t.Errorf("the check's sleep survived its cancelled run")
		}
	}
	statements, _ := filepath.Glob(filepath.Join(state, "runs", "*", "terminal-statement.json"))
	if len(statements) != 1 {
		t.Fatalf("want one terminal statement, found %q\n%s", statements, stderr)
	}
	var ts evidence.Statement[evidence.Terminal]
	if b, err := os.ReadFile(statements[0]); err != nil || json.Unmarshal(b, &ts) != nil {
		t.Fatalf("reading the terminal statement: %v", err)
	}
	if ts.Predicate.Outcome != "no-verdict" {
		t.Errorf("outcome %q, want no-verdict", ts.Predicate.Outcome)
	}
	kinds := map[string]string{}
	for _, e := range ts.Predicate.Events {
		kinds[e.Kind] = string(e.Detail)
	}
	if !strings.Contains(kinds["run.cancelled"], `"cause":"runmill received terminated"`) {
		t.Errorf("no run.cancelled event naming SIGTERM: %v", kinds)
	}
	for _, k := range []string{"run.started", "sweep.done", "run.finished"} {
		if _, ok := kinds[k]; !ok {
			t.Errorf("no %s event: %v", k, kinds)
		}
	}
}

// TestFIFOAmongReusableArtifacts is the bricking, end to end: FIFOs
// planted among a reusable run's artifacts, a verification whose baseline
// would be reused from that run, SIGTERM while its candidate's check
// sleeps, then SIGKILL half a second later, as a runner cancelling a job
// does when the first signal is not obeyed at once. Whether the open of a
// planted FIFO waits (something no context reaches: SIGKILL then lands
// while runmill is still held there, its keeper's shim, runc init and
// mounted root left behind) or is refused (the run ends by itself, and
// SIGKILL, if it still finds runmill, lands during its cleanup), the next
// verification on the state directory (without reuse) starts, sweeps what
// was left and reaches a verdict: never RM-SANDBOX-006.
func TestFIFOAmongReusableArtifacts(t *testing.T) {
	if containerdAddress == "" {
		t.Skip(noSandbox)
	}
	r, base, slow := sleepRepo(t, "300.2303")
	state := t.TempDir()
	args := []string{"--repo", r.Dir, "--out", state, "--containerd-address", containerdAddress, "--signing-key", keyFile(t), "--no-github"}
	first, firstErr := runmillProcess(t, append([]string{"verify", "--base", base, "--candidate", base}, args...)...)
	if err := first.Wait(); err != nil {
		t.Fatalf("the reusable run: %v\n%s", err, firstErr)
	}
	arts, _ := filepath.Glob(filepath.Join(state, "runs", "*", "artifacts", "sha256", "*"))
	if len(arts) == 0 {
		t.Fatal("the reusable run stored no artifact")
	}
	for _, a := range arts {
		if err := os.Remove(a); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(a, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd, stderr := runmillProcess(t, append([]string{"verify", "--base", base, "--candidate", slow}, args...)...)
	waitSleeper(t, cmd, stderr, "300.2303")
	cmd.Process.Signal(syscall.SIGTERM)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var err error
	killed := false
	select {
	case err = <-exited:
	case <-time.After(500 * time.Millisecond):
		cmd.Process.Kill()
		err, killed = <-exited, true
	}
	var ee *exec.ExitError
	switch {
	case killed && (!errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL):
		t.Fatalf("after SIGTERM and SIGKILL: %v, want killed by SIGKILL\n%s", err, stderr)
	case !killed && (!errors.As(err, &ee) || ee.ExitCode() != 3):
		t.Fatalf("after SIGTERM: %v, want exit 3\n%s", err, stderr)
	}
	left := sandboxtest.LeftBy(t, cmd.Process.Pid)
	t.Logf("runmill after SIGTERM (then SIGKILL: %v) left %q:\n%s", killed, left.Remaining(), stderr)
	next, nextErr := runmillProcess(t, append([]string{"verify", "--base", base, "--candidate", base, "--no-reuse"}, args...)...)
	if err := next.Wait(); err != nil {
		t.Fatalf("the next run: %v\n%s", err, nextErr)
	}
	if strings.Contains(nextErr.String(), "RM-SANDBOX-006") {
		t.Errorf("the next run's sweep failed somewhere:\n%s", nextErr)
	}
	if rem := left.Remaining(); len(rem) > 0 {
		t.Errorf("left after the next run's sweep: %q\n%s", rem, nextErr)
	}
	if bundles, _ := filepath.Glob(filepath.Join(state, "runs", "*", "evidence.json")); len(bundles) != 2 {
		t.Errorf("want the reusable run's and the next run's signed bundles, found %q", bundles)
	}
}
