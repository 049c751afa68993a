package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runmill/verify/internal/sandbox"
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
	s := needSandbox(t)
	if !s.Private() {
		t.Skip("the sandbox under test uses a shared containerd")
	}
	state, err := os.MkdirTemp("", "rmsb-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(state)
	id := killedRun(t, "-", state)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	next, err := sandbox.Connect(ctx, sandbox.Options{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := next.Close(); err != nil {
			t.Error(err)
		}
	}()
	sweep(t, next, id, "313.4")
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
	again, err := s.Sweep(context.Background())
	if err != nil || len(again) != 0 {
		t.Errorf("second sweep: %q, %v", again, err)
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
