package sandbox_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runmill/verify/internal/sandbox"
	"github.com/runmill/verify/pkg/rmerr"
)

// checkout makes a directory shaped like a verification checkout: files,
// .git metadata, and everything world-writable on the host, so that only
// the read-only mount can refuse a write (a denial then proves the mount,
// not the file mode).
func checkout(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "checkout")
	for _, d := range []string{dir, filepath.Join(dir, ".git"), filepath.Join(dir, "fixtures")} {
		if err := os.Mkdir(d, 0o777); err != nil {
			t.Fatal(err)
		}
		os.Chmod(d, 0o777)
	}
	for name, content := range map[string]string{
		"main.go":           "package main\n",
		".git/HEAD":         "ref: refs/heads/main\n",
		"fixtures/golden":   "expected\n",
		"other-report.xml":  "",
		"reports-dir/.keep": "",
	} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o777)
		os.Chmod(filepath.Dir(p), 0o777)
		if err := os.WriteFile(p, []byte(content), 0o666); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, 0o666)
	}
	return dir
}

// reportFile pre-creates the one writable file, as the engine does.
func reportFile(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "report.xml")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func run(t *testing.T, spec sandbox.Spec) sandbox.Result {
	t.Helper()
	s := needSandbox(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := s.Run(ctx, spec)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Cleanup(func() { assertNoProcesses(t, res.ID) })
	return res
}

// assertNoProcesses fails when any host process still lives in the task's
// cgroup: after Run returns, nothing of the task may survive.
//
// A killed process stays listed, as a zombie with an empty command line,
// until its reaper collects it; that takes a moment on a loaded machine, so
// the look is repeated for up to five seconds before a survivor counts.
func assertNoProcesses(t *testing.T, id string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var left []string
		paths, _ := filepath.Glob("/proc/[0-9]*/cgroup")
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err == nil && bytes.Contains(b, []byte("/"+id+"\n")) {
				cmd, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "cmdline"))
				left = append(left, fmt.Sprintf("%s %q", filepath.Dir(p), cmd))
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("processes of task %s survived: %s", id, strings.Join(left, ", "))
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func sha(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// TestReadOnlyCheckout: every write to the checkout, its .git, a sibling
// report, or a host submount of it fails; the one report file is writable.
func TestReadOnlyCheckout(t *testing.T) {
	needSandbox(t)
	dir := checkout(t)
	// A host submount inside the checkout: without recursive read-only it
	// would stay writable inside the task.
	sub := filepath.Join(dir, "node_modules")
	os.Mkdir(sub, 0o777)
	if err := syscall.Mount("tmpfs", sub, "tmpfs", 0, "size=1m,mode=0777"); err != nil {
		t.Logf("no host submount (%v); testing the flat case only", err)
	} else {
		t.Cleanup(func() { syscall.Unmount(sub, syscall.MNT_DETACH) })
	}
	report := reportFile(t, dir)
	before := snapshot(t, dir, report)

	attempts := []string{
		"echo x > main.go",
		"echo x >> main.go",
		"echo x > new-untracked-file",
		"mkdir newdir",
		"rm -f main.go",
		"mv main.go moved.go",
		"touch main.go",
		"chmod 000 main.go",
		"echo x > .git/HEAD",
		"echo x > .git/index.lock",
		"echo rewritten > fixtures/golden",
		"echo x > other-report.xml",
		"echo x > node_modules/injected",
		"rm -f report.xml",
		"mv report.xml r2",
		"ln -sf /etc/passwd report.xml",
		"mkfifo report.xml.fifo",
	}
	var script strings.Builder
	for i, a := range attempts {
		fmt.Fprintf(&script, "if (%s) 2>/dev/null; then echo 'WROTE %d'; fi\n", a, i)
	}
	script.WriteString("printf '<testsuite/>' > report.xml && echo REPORT-OK\n")
	res := run(t, sandbox.Spec{Command: script.String(), Dir: dir, ReadOnly: []string{dir, filepath.Join(dir, ".git")}, ReportFile: report})
	out := string(res.Stdout.Kept)
	if res.ExitCode != 0 || !strings.Contains(out, "REPORT-OK") {
		t.Fatalf("report write failed: exit %d, stdout %q, stderr %q", res.ExitCode, out, res.Stderr.Kept)
	}
	for i, a := range attempts {
		if strings.Contains(out, fmt.Sprintf("WROTE %d\n", i)) {
			t.Errorf("write succeeded: %s", a)
		}
	}
	if got, _ := os.ReadFile(report); string(got) != "<testsuite/>" {
		t.Errorf("host report = %q", got)
	}
	if after := snapshot(t, dir, report); after != before {
		t.Errorf("checkout changed:\nbefore %s\nafter  %s", before, after)
	}
}

// snapshot lists a tree (names, modes, contents) except one file.
func snapshot(t *testing.T, dir, except string) string {
	t.Helper()
	var b strings.Builder
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == except {
			return err
		}
		fmt.Fprintf(&b, "%s %v", p, fi.Mode())
		if fi.Mode().IsRegular() {
			c, _ := os.ReadFile(p)
			fmt.Fprintf(&b, " %q", c)
		}
		b.WriteString("\n")
		return nil
	})
	return b.String()
}

// TestNetworkDenied: TCP, UDP and DNS out fail at once (no route), the
// containerd socket is not there, and loopback works.
func TestNetworkDenied(t *testing.T) {
	s := needSandbox(t)
	script := `
# bash's /dev/tcp and /dev/udp do a real connect(2); timeout guards against
# a broken sandbox where the SYN would actually leave.
timeout 5 bash -c 'exec 3<>/dev/tcp/192.0.2.1/80' 2>&1; echo "tcp=$?"
timeout 5 bash -c 'exec 3<>/dev/tcp/1.1.1.1/443' 2>&1; echo "tcp-public=$?"
timeout 5 bash -c 'echo x >/dev/udp/192.0.2.1/53' 2>&1; echo "udp=$?"
timeout 5 getent hosts example.com; echo "dns=$?"
timeout 5 getent ahosts deb.debian.org; echo "dns2=$?"
if [ -e ` + s.Address() + ` ]; then echo socket=present; else echo socket=absent; fi
if [ -e /run/containerd/containerd.sock ]; then echo syssocket=present; else echo syssocket=absent; fi
timeout 5 perl -MIO::Socket::INET -e '$l = IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1:0") or die; $c = IO::Socket::INET->new(PeerAddr => "127.0.0.1", PeerPort => $l->sockport) or die; print "loopback=ok\n"'
`
	start := time.Now()
	res := run(t, sandbox.Spec{Command: script})
	out := string(res.Stdout.Kept)
	t.Logf("%s in %s", out, time.Since(start))
	for _, want := range []string{"Network is unreachable", "tcp=1", "tcp-public=1", "udp=1", "dns=2", "dns2=2", "socket=absent", "syssocket=absent", "loopback=ok"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in output", want)
		}
	}
	if res.Duration > 4*time.Second {
		t.Errorf("network attempts took %s: something waited on a route", res.Duration)
	}
}

// TestEnvironmentNotInherited: secrets in runmill's own environment never
// reach the task; the task sees exactly the given environment.
func TestEnvironmentNotInherited(t *testing.T) {
	t.Setenv("GITHUB_TOKEN", "ghp_runmill_test_secret")
	t.Setenv("RUNMILL_SIGNING_KEY", "runmill-test-signing-key")
	res := run(t, sandbox.Spec{
		Command: `tr '\0' '\n' < /proc/1/environ; echo ---; env`,
		Env:     []string{"CI=true", "LANG=C.UTF-8"},
	})
	out := string(res.Stdout.Kept)
	for _, secret := range []string{"ghp_runmill_test_secret", "runmill-test-signing-key", "GITHUB_"} {
		if strings.Contains(out, secret) {
			t.Errorf("task environment contains %q:\n%s", secret, out)
		}
	}
	for _, want := range []string{"CI=true", "LANG=C.UTF-8", "TMPDIR=/tmp", "HOME=/tmp", "PATH="} {
		if !strings.Contains(out, want+"\n") && !strings.Contains(out, want) {
			t.Errorf("task environment lacks %q", want)
		}
	}
}

// TestHostFilesHidden: files outside the binds do not exist in the task,
// including through a symlink planted in the checkout.
func TestHostFilesHidden(t *testing.T) {
	needSandbox(t)
	secretDir := t.TempDir()
	secret := filepath.Join(secretDir, "signing.key")
	os.WriteFile(secret, []byte("runmill-test-secret-key"), 0o644)
	dir := checkout(t)
	os.Symlink(secret, filepath.Join(dir, "escape"))
	os.Symlink("/etc/shadow", filepath.Join(dir, "shadow"))
	home, _ := os.UserHomeDir()
	script := fmt.Sprintf(`cat %s; cat escape; cat shadow; cat /etc/shadow; ls %s; ls /var/lib /run /home 2>&1; cat %s/.bash_history; echo done`, secret, secretDir, home)
	res := run(t, sandbox.Spec{Command: script, Dir: dir, ReadOnly: []string{dir}})
	out := string(res.Stdout.Kept) + string(res.Stderr.Kept)
	if strings.Contains(out, "runmill-test-secret-key") || strings.Contains(out, "root:") {
		t.Errorf("host file leaked:\n%s", out)
	}
	if !strings.Contains(out, "done") {
		t.Errorf("script did not finish: %s", out)
	}
}

// TestForkBombContained: the pids limit stops a fork bomb, the timeout ends
// it, and nothing of it survives.
func TestForkBombContained(t *testing.T) {
	res := run(t, sandbox.Spec{
		Command: `f() { f | f & }; f; sleep 2; echo survived`,
		Limits:  sandbox.Limits{Pids: 64},
		Timeout: 3 * time.Second,
	})
	t.Logf("exit %d timed out %v in %s; stderr %d bytes", res.ExitCode, res.TimedOut, res.Duration, res.Stderr.Size)
	if !bytes.Contains(res.Stderr.Kept, []byte("fork")) {
		t.Errorf("no fork failure seen; stderr %q", clip(res.Stderr.Kept))
	}
}

// TestMemoryLimitOOM: allocating past the memory limit is OOM-killed and
// recorded as such.
func TestMemoryLimitOOM(t *testing.T) {
	res := run(t, sandbox.Spec{
		Command: `perl -e '$x = "x" x (512 * 1024 * 1024); print "allocated\n"'`,
		Limits:  sandbox.Limits{MemoryBytes: 64 << 20},
		Timeout: 30 * time.Second,
	})
	if !res.OOMKilled || res.ExitCode != 128+int(syscall.SIGKILL) || bytes.Contains(res.Stdout.Kept, []byte("allocated")) {
		t.Errorf("want OOM kill: exit %d, oom %v, stdout %q", res.ExitCode, res.OOMKilled, res.Stdout.Kept)
	}
	ok := run(t, sandbox.Spec{Command: `true`, Limits: sandbox.Limits{MemoryBytes: 64 << 20}})
	if ok.OOMKilled || ok.ExitCode != 0 {
		t.Errorf("plain run: exit %d oom %v", ok.ExitCode, ok.OOMKilled)
	}
}

// TestTmpDirBounded: TMPDIR is writable (HOME, caches inside) and filling it
// stops at its size; nothing lands on the host disk.
func TestTmpDirBounded(t *testing.T) {
	res := run(t, sandbox.Spec{
		Command: `mkdir -p "$GOCACHE" "$npm_config_cache" && echo ok > "$HOME/.config-test" &&
dd if=/dev/zero of="$TMPDIR/fill" bs=1M count=64 2>&1; echo "dd=$?"; du -sk "$TMPDIR"`,
		Limits: sandbox.Limits{TmpBytes: 8 << 20},
	})
	out := string(res.Stdout.Kept)
	if !strings.Contains(out, "No space left on device") || strings.Contains(out, "dd=0") {
		t.Errorf("TMPDIR not bounded: %s", out)
	}
	var kb int
	fmt.Sscanf(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:], "%d", &kb)
	if kb > 8<<10 {
		t.Errorf("TMPDIR holds %d KiB, limit 8192", kb)
	}
}

// TestOutputCapped: a flood on stdout (2 GiB, the hostile case) keeps
// only the cap, but the size and hash cover every byte; memory stays bounded
// because nothing but the kept prefix is buffered.
func TestOutputCapped(t *testing.T) {
	const total = 2 << 30
	const keep = 1 << 20
	res := run(t, sandbox.Spec{
		Command:   fmt.Sprintf(`head -c %d /dev/zero; echo tail >&2`, total),
		MaxOutput: keep,
	})
	h := sha256.New()
	io.CopyN(h, zeroReader{}, total)
	want := hex.EncodeToString(h.Sum(nil))
	if res.Stdout.Size != total || int64(len(res.Stdout.Kept)) != keep || !res.Stdout.Truncated || res.Stdout.SHA256 != want {
		t.Errorf("stdout capture: size %d kept %d truncated %v sha %s (want %s)", res.Stdout.Size, len(res.Stdout.Kept), res.Stdout.Truncated, res.Stdout.SHA256, want)
	}
	if string(res.Stderr.Kept) != "tail\n" || res.Stderr.Truncated || res.Stderr.SHA256 != sha([]byte("tail\n")) {
		t.Errorf("stderr capture: %+v", res.Stderr)
	}
	t.Logf("2 GiB of output in %s", res.Duration)
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestTimeoutKillsEverything: past the timeout every process dies, the
// daemonized one included, and the run says so.
func TestTimeoutKillsEverything(t *testing.T) {
	res := run(t, sandbox.Spec{
		Command: `setsid sleep 313.37 & (trap '' TERM HUP; exec sleep 313.38) & echo started; sleep 300`,
		Timeout: time.Second,
	})
	if !res.TimedOut || res.ExitCode != 128+int(syscall.SIGKILL) {
		t.Errorf("want timeout: %+v", res)
	}
	if res.Duration < time.Second || res.Duration > 5*time.Second {
		t.Errorf("duration %s, want about 1s", res.Duration)
	}
	if !bytes.Contains(res.Stdout.Kept, []byte("started")) {
		t.Errorf("output before the kill lost: %q", res.Stdout.Kept)
	}
	assertNoSleeper(t, "313.37")
	assertNoSleeper(t, "313.38")
}

// TestDaemonizedChildKilledOnExit: a check that exits 0 and leaves a
// daemon behind does not leave it running.
func TestDaemonizedChildKilledOnExit(t *testing.T) {
	res := run(t, sandbox.Spec{Command: `setsid sleep 313.39 > /dev/null 2>&1 & exit 0`})
	if res.ExitCode != 0 || res.TimedOut {
		t.Errorf("want exit 0: %+v", res)
	}
	assertNoSleeper(t, "313.39")
}

func assertNoSleeper(t *testing.T, arg string) {
	t.Helper()
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range paths {
		if b, _ := os.ReadFile(p); bytes.Equal(b, []byte("sleep\x00"+arg+"\x00")) {
			t.Errorf("%s still runs: sleep %s", filepath.Dir(p), arg)
		}
	}
}

// TestSpecRefused: an unsafe spec is refused before anything runs (the
// full table is TestValidate).
func TestSpecRefused(t *testing.T) {
	s := needSandbox(t)
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	os.WriteFile(full, []byte("x"), 0o600)
	for name, spec := range map[string]sandbox.Spec{
		"report not empty":     {Command: "true", ReportFile: full},
		"env owned by sandbox": {Command: "true", Env: []string{"HOME=/root"}},
		"view source missing":  {Command: "true", Views: []sandbox.View{{Source: filepath.Join(dir, "absent"), Destination: dir}}},
		"view onto a file":     {Command: "true", Views: []sandbox.View{{Source: dir, Destination: full}}},
		"view not absolute":    {Command: "true", Views: []sandbox.View{{Source: "views/x", Destination: dir}}},
	} {
		if _, err := s.Run(context.Background(), spec); rmerr.CodeOf(err) != rmerr.SandboxSpec {
			t.Errorf("%s: want %s, got %v", name, rmerr.SandboxSpec, err)
		}
	}
}

// TestProbe: the probe measures every guarantee on this runtime, with a
// checkout (and a host submount in it) among the read-only paths.
func TestProbe(t *testing.T) {
	s := needSandbox(t)
	dir := checkout(t)
	sub := filepath.Join(dir, "node_modules")
	os.Mkdir(sub, 0o777)
	if err := syscall.Mount("tmpfs", sub, "tmpfs", 0, "size=1m,mode=0777"); err == nil {
		t.Cleanup(func() { syscall.Unmount(sub, syscall.MNT_DETACH) })
	}
	rep, err := s.Probe(context.Background(), sandbox.Spec{ReadOnly: []string{dir, filepath.Join(dir, ".git")}, Env: []string{"CI=true"}})
	for _, c := range rep.Checks {
		t.Logf("%-6v %-28s %s", c.OK, c.Name, c.Detail)
	}
	t.Logf("runtime %+v; canary %s", rep.Runtime, rep.Duration)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatal("probe not OK without an error")
	}
	names := map[string]bool{}
	for _, c := range rep.Checks {
		names[c.Name] = true
	}
	for _, want := range []string{"network.tcp4-external", "network.loopback", "mounts.read-only", "write.report", "user.non-root", "capabilities.none", "write.denied " + dir, "environment.exact", "limits.pids", "limits.memory"} {
		if !names[want] {
			t.Errorf("probe lacks check %q", want)
		}
	}
	if _, err := s.Probe(context.Background(), sandbox.Spec{Command: "true"}); rmerr.CodeOf(err) != rmerr.SandboxSpec {
		t.Errorf("probe with a command: want %s, got %v", rmerr.SandboxSpec, err)
	}
}

func clip(b []byte) string {
	if len(b) > 300 {
		b = b[:300]
	}
	return string(b)
}

// TestParallelRuns: independent runs proceed concurrently (the engine's
// --parallel), sharing one shim. Each task prints the clock when its
// command starts and ends: concurrent runs' intervals overlap, serialized
// ones cannot (an order, not a duration, so a loaded machine cannot fail
// it).
func TestParallelRuns(t *testing.T) {
	s := needSandbox(t)
	type span struct{ start, end int64 }
	spans := make(chan span, 2)
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			res, err := s.Run(context.Background(), sandbox.Spec{Command: "date +%s%N; sleep 2; date +%s%N"})
			var sp span
			if err == nil {
				if _, err = fmt.Sscan(string(res.Stdout.Kept), &sp.start, &sp.end); err != nil {
					err = fmt.Errorf("stdout %q: %v", res.Stdout.Kept, err)
				}
			}
			spans <- sp
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	a, b := <-spans, <-spans
	if a.start >= b.end || b.start >= a.end {
		t.Errorf("the two runs did not overlap (%d–%d and %d–%d ns): not concurrent", a.start, a.end, b.start, b.end)
	}
}

// TestCloseLifecycle: a second Sandbox on the same containerd runs, closes
// (removing its shim keeper) and then refuses work; Close is idempotent.
func TestCloseLifecycle(t *testing.T) {
	s := needSandbox(t)
	other, err := sandbox.Connect(context.Background(), sandbox.Options{Address: s.Address(), StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	// Warm starts the shared shim, Idle stops it, and a run after Idle
	// starts it again.
	if err := other.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if res, err := other.Run(context.Background(), sandbox.Spec{Command: "true"}); err != nil || res.ExitCode != 0 {
			t.Fatalf("run %d: %v %+v", i, err, res)
		}
		if err := other.Idle(); err != nil {
			t.Fatalf("Idle: %v", err)
		}
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	if err := other.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := other.Run(context.Background(), sandbox.Spec{Command: "true"}); err == nil {
		t.Error("Run after Close succeeded")
	}
	if s.Private() && other.Private() {
		t.Error("connecting to an explicit address started a private daemon")
	}
}

// TestCancelKillsEverything: when runmill gives up (SIGTERM cancels its
// context), the run is killed, cleaned up, and reported as an error, not
// as a result.
func TestCancelKillsEverything(t *testing.T) {
	s := needSandbox(t)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	res, err := s.Run(ctx, sandbox.Spec{Command: "setsid sleep 313.42 & sleep 313.43", Timeout: time.Minute})
	if rmerr.CodeOf(err) != rmerr.SandboxRuntime {
		t.Errorf("want %s, got %v", rmerr.SandboxRuntime, err)
	}
	assertNoSleeper(t, "313.42")
	assertNoSleeper(t, "313.43")
	if res.ID != "" {
		assertNoProcesses(t, res.ID)
	}
}

// TestUsageMetered: the cgroup's CPU time and peak memory reach the result,
// for the terminal statement's budget ledger.
func TestUsageMetered(t *testing.T) {
	res := run(t, sandbox.Spec{Command: `i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done`})
	if res.ExitCode != 0 || res.CPU < 50*time.Millisecond || res.MemoryPeak <= 0 {
		t.Fatalf("exit %d, CPU %s, memory peak %d: the cgroup's usage was not metered", res.ExitCode, res.CPU, res.MemoryPeak)
	}
	t.Logf("CPU %s, memory peak %d bytes, wall %s", res.CPU, res.MemoryPeak, res.Duration)
}

// TestPrepareDiscard: a prepared task that is discarded never runs its
// command and leaves no container; it cannot be run afterwards, and a task
// runs only once.
func TestPrepareDiscard(t *testing.T) {
	s := needSandbox(t)
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	marker := filepath.Join(dir, "ran")
	task, err := s.Prepare(context.Background(), sandbox.Spec{Command: "touch " + marker, ReadOnly: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Discard(); err != nil {
		t.Fatalf("Discard: %v", err)
	}
	if _, err := task.Run(context.Background()); err == nil {
		t.Error("Run after Discard succeeded")
	}
	if err := task.Discard(); err == nil {
		t.Error("a second Discard succeeded")
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the discarded task's command ran")
	}
	if gone, err := s.Gone(context.Background(), task.ID()); err != nil || !gone {
		t.Errorf("discarded container %s: gone=%v err=%v", task.ID(), gone, err)
	}

	// Prepared, then run once: the second Run is refused.
	task, err = s.Prepare(context.Background(), sandbox.Spec{Command: "true"})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := task.Run(context.Background()); err != nil || res.ExitCode != 0 {
		t.Fatalf("%v %+v", err, res)
	}
	if _, err := task.Run(context.Background()); err == nil {
		t.Error("a task ran twice")
	}
	if gone, err := s.Gone(context.Background(), task.ID()); err != nil || !gone {
		t.Errorf("container %s after its run: gone=%v err=%v", task.ID(), gone, err)
	}
}

// TestSeesHostMounts: the harness's containerd (a private one is this
// process's child; the system one runs in the host's namespace) shares this
// process's mount namespace, which layered checkouts rely on.
func TestSeesHostMounts(t *testing.T) {
	s := needSandbox(t)
	shared, err := s.SeesHostMounts()
	if err != nil || !shared {
		t.Fatalf("SeesHostMounts = %v, %v", shared, err)
	}
}
