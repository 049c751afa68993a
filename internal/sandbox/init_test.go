package sandbox_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runmill/verify/internal/cgrouptest"
	"github.com/runmill/verify/internal/sandbox"
	"github.com/runmill/verify/internal/taskinit"
)

// TestInitIsPID1: the task's PID 1 is the init, the command runs as its
// child with the exact environment and user, and its exit status reaches
// the result as it would from a command that was PID 1 itself.
func TestInitIsPID1(t *testing.T) {
	for _, tc := range []struct {
		name    string
		command string
		code    int
		stdout  string
	}{
		{"exit 0", "true", 0, ""},
		{"exit code", "exit 7", 7, ""},
		{"killed by a signal", "kill -TERM $$", 128 + int(syscall.SIGTERM), ""},
		{"init is PID 1", `tr '\0' ' ' < /proc/1/cmdline | cut -d' ' -f1,2`, 0, taskinit.Path + " " + taskinit.Arg + "\n"},
		{"command is its child", `echo $PPID`, 0, "1\n"},
		{"no init output", `echo out; echo err >&2`, 0, "out\n"},
		{"same user as the command", `grep -E '^(Uid|CapEff|NoNewPrivs)' /proc/1/status | tr -s '\t' ' '`, 0,
			"Uid: 65534 65534 65534 65534\nCapEff: 0000000000000000\nNoNewPrivs: 1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, sandbox.Spec{Command: tc.command})
			if res.ExitCode != tc.code || res.TimedOut || string(res.Stdout.Kept) != tc.stdout {
				t.Errorf("exit %d timed out %v stdout %q stderr %q; want exit %d stdout %q", res.ExitCode, res.TimedOut, res.Stdout.Kept, res.Stderr.Kept, tc.code, tc.stdout)
			}
			if tc.name == "no init output" && string(res.Stderr.Kept) != "err\n" {
				t.Errorf("stderr %q, want only the command's", res.Stderr.Kept)
			}
		})
	}
}

// TestInitLimitWithoutOuterTimer: with runmill's own timer off, the init
// alone ends a task that ignores SIGTERM and sleeps past its limit,
// daemonized child included, and the result still says timed out.
func TestInitLimitWithoutOuterTimer(t *testing.T) {
	needSandbox(t)
	defer sandbox.DisableOuterTimerUnsafe()()
	res := run(t, sandbox.Spec{
		Command: `trap '' TERM; setsid sleep 313.70 & sleep 313.71; echo survived`,
		Timeout: 2 * time.Second,
	})
	if !res.TimedOut || res.ExitCode != taskinit.ExitKilled || res.Duration < 2*time.Second {
		t.Errorf("want a timeout ended by the init: %+v", res)
	}
	if bytes.Contains(res.Stdout.Kept, []byte("survived")) {
		t.Errorf("the command ran past its limit: %q", res.Stdout.Kept)
	}
	assertNoSleeper(t, "313.700")
	assertNoSleeper(t, "313.70")
	assertNoSleeper(t, "313.71")
}

// TestRunmillKilledEndsTask: runmill is killed with SIGKILL in the middle
// of a five-minute check; within seconds no process of the check remains
// (the init read the end of its lifeline), though no runmill is left to
// kill anything. The container record stays for the next Sweep.
func TestRunmillKilledEndsTask(t *testing.T) {
	s := needSandbox(t)
	id, helper := helperRun(t, s.Address(), stateDir, "313.5")
	helper.Process.Signal(syscall.SIGKILL)
	helper.Wait()
	checkEnded(t, id, "313.5")
	sweep(t, s, id, "313.5")
}

// TestRunmillOOMKilledEndsTask: the same when the kernel's OOM killer ends
// runmill: the stand-in runs in a memory cgroup of its own and allocates
// until the limit kills it.
func TestRunmillOOMKilledEndsTask(t *testing.T) {
	s := needSandbox(t)
	cg := cgrouptest.New(t, "to OOM-kill runmill in")
	id, helper := helperRun(t, s.Address(), stateDir, "313.6", hogEnv+"=1")
	// The helper blocks in its hog until its cgroup and limit are set.
	if err := cg.Add(helper.Process.Pid); err != nil {
		helper.Process.Kill()
		helper.Wait()
		t.Fatal(err)
	}
	if err := cg.LimitAbove(32 << 20); err != nil {
		helper.Process.Kill()
		helper.Wait()
		t.Fatal(err)
	}
	if err := os.WriteFile(hogGo(helper), []byte("go"), 0o600); err != nil {
		helper.Process.Kill()
		helper.Wait()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- helper.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("the stand-in runmill was not killed by SIGKILL: %v", err)
		}
	case <-time.After(60 * time.Second):
		helper.Process.Kill()
		<-done
		t.Fatal("the stand-in runmill was never OOM-killed")
	}
	if n := cg.OOMKills(t); n < 1 {
		t.Fatalf("the memory cgroup reports %d OOM kills: the stand-in died of something else", n)
	}
	checkEnded(t, id, "313.6")
	sweep(t, s, id, "313.6")
}

// checkEnded waits a few seconds for every process of the dead runmill's
// task to go: the init, the shell and both sleepers (their command lines
// all name tag).
func checkEnded(t *testing.T, id, tag string) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(10 * time.Second)
	for {
		left := processesNaming(tag)
		if len(left) == 0 {
			t.Logf("every process of the check was gone %s after runmill's death", time.Since(start).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10s after runmill's death the check still runs: %q", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
	assertNoProcesses(t, id)
}

// processesNaming lists the command lines that contain s.
func processesNaming(s string) []string {
	var out []string
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	self := "/proc/" + strconv.Itoa(os.Getpid()) + "/cmdline"
	for _, p := range paths {
		if p == self {
			continue
		}
		if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(s)) {
			out = append(out, strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

// hogEnv makes the stand-in runmill, once its task runs, wait for the file
// hogGo names and then allocate memory until it is killed.
const hogEnv = "RUNMILL_SANDBOX_TEST_HOG"

func hogGo(helper *exec.Cmd) string {
	return filepath.Join(os.TempDir(), "rmsb-hog-"+strconv.Itoa(helper.Process.Pid))
}

func hog(report string) {
	for {
		if b, _ := os.ReadFile(report); bytes.Contains(b, []byte("started")) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	goFile := filepath.Join(os.TempDir(), "rmsb-hog-"+strconv.Itoa(os.Getpid()))
	for {
		if _, err := os.Stat(goFile); err == nil {
			os.Remove(goFile)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for {
		b := make([]byte, 4<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		hogKeep = append(hogKeep, b)
		time.Sleep(5 * time.Millisecond)
	}
}

// hogKeep holds what hog touched: a package variable, so the compiler cannot
// prove the memory dead and the pages stay resident.
var hogKeep [][]byte

// BenchmarkInitExec is the init's own start-up, the part of its cost that
// every task pays on top of BenchmarkRunTrue's sandbox overhead before the
// command starts: exec of this binary up to the mode dispatch (which then
// refuses, not being PID 1), against exec of /bin/true.
func BenchmarkInitExec(b *testing.B) {
	for _, bc := range []struct {
		name string
		argv []string
	}{
		{"true", []string{"/bin/true"}},
		{"init", []string{os.Args[0], taskinit.Arg, "--limit", "1m", "--lifeline", "/nonexistent", "--", "/bin/true"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				err := exec.Command(bc.argv[0], bc.argv[1:]...).Run()
				var ee *exec.ExitError
				if bc.name == "init" && (!errors.As(err, &ee) || ee.ExitCode() != taskinit.ExitInitFailed) {
					b.Fatalf("init outside a task: %v, want exit %d", err, taskinit.ExitInitFailed)
				}
				if bc.name == "true" && err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
