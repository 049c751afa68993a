package procfs_test

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runmill/verify/internal/procfs"
)

// TestRead: a child is found with its parent, name, arguments, start time
// and cgroups; once it has exited and before it is reaped it is a zombie;
// once reaped, it is gone.
func TestRead(t *testing.T) {
	cmd := exec.Command("sleep", "61.5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	p, ok := procfs.Read(pid)
	for deadline := time.Now().Add(10 * time.Second); ok && len(p.Args) < 2 && time.Now().Before(deadline); p, ok = procfs.Read(pid) {
		time.Sleep(time.Millisecond) // between fork and exec
	}
	if !ok || p.PPID != os.Getpid() || p.Name != "sleep" || !slices.Equal(p.Args, []string{"sleep", "61.5"}) || p.Exited() {
		t.Fatalf("Read(%d) = %+v, %v", pid, p, ok)
	}
	if !slices.ContainsFunc(procfs.All(), func(q procfs.Process) bool { return q.PID == pid }) {
		t.Error("All does not list the child")
	}
	if s, err := procfs.Start(pid); err != nil || s == "" || strings.Trim(s, "0123456789") != "" {
		t.Errorf("Start = %q, %v", s, err)
	}
	if cgs := procfs.Cgroups(pid); len(cgs) == 0 || !slices.Equal(cgs, procfs.Cgroups(os.Getpid())) {
		t.Errorf("the child's cgroups %q are not its parent's %q", cgs, procfs.Cgroups(os.Getpid()))
	}
	cmd.Process.Kill()
	// Exited, not yet reaped: a zombie, without a command line.
	for {
		if p, ok := procfs.Read(pid); ok && p.Exited() {
			if len(p.Args) != 0 {
				t.Errorf("a zombie's arguments %q", p.Args)
			}
			break
		}
	}
	cmd.Wait()
	if _, ok := procfs.Read(pid); ok {
		t.Error("a reaped process is still read")
	}
}

// TestCgroupsByController: this process's cgroups by controller say what
// its /proc/self/cgroup lines say, each controller of a v1 line on its own,
// the cgroup2 line under "".
func TestCgroupsByController(t *testing.T) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	by := procfs.CgroupsByController(os.Getpid())
	paths := procfs.Cgroups(os.Getpid())
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(by) == 0 || len(paths) != len(lines) {
		t.Fatalf("by controller %v, paths %v, for\n%s", by, paths, b)
	}
	for i, line := range lines {
		f := strings.SplitN(line, ":", 3)
		if paths[i] != f[2] {
			t.Errorf("line %d: path %q, want %q", i, paths[i], f[2])
		}
		for _, c := range strings.Split(f[1], ",") {
			if by[c] != f[2] {
				t.Errorf("controller %q: %q, want %q", c, by[c], f[2])
			}
		}
	}
	if procfs.CgroupsByController(-1) != nil || procfs.Cgroups(-1) != nil {
		t.Error("a process that does not exist has cgroups")
	}
}
