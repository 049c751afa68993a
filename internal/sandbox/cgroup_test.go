package sandbox_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/procfs"
	"github.com/runmill/verify/internal/sandbox"
)

func procfsStart(pid string) (string, error) {
	n, err := strconv.Atoi(pid)
	if err != nil {
		return "", err
	}
	return procfs.Start(n)
}

// TestTasksInOwnCgroups: on the real kernel and containerd, every task
// of a run is a cgroup of its own under the run's parent, which weighs
// cores × one process's; a second run, at the same time, has a parent of
// its own; closing a run removes its parent from every hierarchy.
func TestTasksInOwnCgroups(t *testing.T) {
	s := needSandbox(t)
	other, err := sandbox.Connect(context.Background(), sandbox.Options{Address: s.Address(), StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			other.Close()
		}
	}()
	parents := map[string]bool{}
	for _, sb := range []*sandbox.Sandbox{s, other} {
		parent, dirs, weightFile := sandbox.RunCgroup(sb)
		if parents[parent] {
			t.Fatalf("two runs share the parent cgroup %s", parent)
		}
		parents[parent] = true
		if !strings.HasPrefix(filepath.Base(parent), "runmill-run-") || len(dirs) == 0 {
			t.Fatalf("run parent %q in %q", parent, dirs)
		}
		want := strconv.Itoa(runtime.NumCPU() * map[string]int{"cpu.shares": 1024, "cpu.weight": 100}[weightFile])
		if got := readTrimmed(t, filepath.Join(dirs[0], weightFile)); got != want {
			t.Errorf("%s of %s = %s, want %s (cores × one process's)", weightFile, dirs[0], got, want)
		}
		var seen []string
		for range 2 {
			task, err := sb.Prepare(context.Background(), sandbox.Spec{Command: "true"})
			if err != nil {
				t.Fatal(err)
			}
			cg := sandbox.TaskCgroup(task)
			if want := parent + "/" + task.ID(); cg != want {
				t.Errorf("task %s is in cgroup %q, want its own, %q", task.ID(), cg, want)
			}
			// In each hierarchy the task's directory holds its process.
			for _, d := range dirs {
				procs := readTrimmed(t, filepath.Join(d, task.ID(), "cgroup.procs"))
				if len(strings.Fields(procs)) != 1 {
					t.Errorf("%s/%s/cgroup.procs = %q, want the task's init alone", d, task.ID(), procs)
				}
			}
			seen = append(seen, cg)
			if err := task.Discard(); err != nil {
				t.Fatal(err)
			}
		}
		if seen[0] == seen[1] {
			t.Errorf("two tasks share the cgroup %s", seen[0])
		}
	}
	_, dirs, _ := sandbox.RunCgroup(other)
	res, err := other.CloseObserved()
	closed = true
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(res, func(r sandbox.Resource) bool { return r.Kind == "cgroup" })
	if i < 0 || !res[i].Gone {
		t.Errorf("Close did not observe the run's parent cgroup gone: %+v", res)
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("after Close %s remains (%v)", d, err)
		}
	}
}

// TestSweepRemovesDeadRunsCgroups: beside this run's parent, the sweep
// removes the parents (with the task cgroups left in them) of runs whose
// runmill is dead — its pid gone, or reused by a process started at
// another time — in every hierarchy, and keeps a live run's.
func TestSweepRemovesDeadRunsCgroups(t *testing.T) {
	s := needSandbox(t)
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	owner := func(pid int, start string) string { return ns + "/" + strconv.Itoa(pid) + "/" + start }
	live := exec.Command("sleep", "60")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { live.Process.Kill(); live.Wait() }()
	liveStart, err := procfs.Start(live.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	names := map[string]string{
		"dead":   sandbox.RunCgroupName(owner(gone.Process.Pid, "1"), "dead0001"),
		"reused": sandbox.RunCgroupName(owner(live.Process.Pid, liveStart+"7"), "bee00001"),
		"live":   sandbox.RunCgroupName(owner(live.Process.Pid, liveStart), "cafe0001"),
	}
	parents := sandbox.RunCgroupsParent(s)
	for _, p := range parents {
		for kind, name := range names {
			dir := filepath.Join(p, name)
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Remove(filepath.Join(dir, "rm-left")); os.Remove(dir) })
			if kind != "live" {
				// A task cgroup its runc never removed.
				if err := os.Mkdir(filepath.Join(dir, "rm-left"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	removed, err := s.Sweep(context.Background())
	if err != nil {
		t.Fatalf("Sweep: %v (removed %q)", err, removed)
	}
	for _, p := range parents {
		for kind, name := range names {
			dir := filepath.Join(p, name)
			_, err := os.Stat(dir)
			switch {
			case kind == "live" && err != nil:
				t.Errorf("the sweep removed the live run's cgroup %s: %v", dir, err)
			case kind != "live" && !os.IsNotExist(err):
				t.Errorf("the sweep left the %s run's cgroup %s (%v)", kind, dir, err)
			case kind != "live" && !slices.Contains(removed, "cgroup "+dir):
				t.Errorf("the sweep does not report removing %s: %q", dir, removed)
			}
		}
	}
	// This run's own parent stays, of course.
	if _, dirs, _ := sandbox.RunCgroup(s); !exists(dirs[0]) {
		t.Errorf("the sweep removed this run's own parent %s", dirs[0])
	}
}

func readTrimmed(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
