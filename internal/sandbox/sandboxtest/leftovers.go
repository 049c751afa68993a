package sandboxtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"

	"github.com/runmill/verify/internal/mountinfo"
	"github.com/runmill/verify/internal/sandbox"
)

// Leftovers are what a runmill killed with SIGKILL left of its sandbox, as
// the kernel shows it: the runc shims that served it (found by its shim
// keeper's id, which names the runmill's pid), their live children (the
// keeper's `runc init`, a check's init), and its tasks' container ids.
type Leftovers struct {
	Shims, Procs []int
	IDs          []string
}

// LeftBy finds what the killed runmill pid left; ids are task ids the
// caller knows of (a check whose processes are already gone has none).
func LeftBy(t testing.TB, pid int, ids ...string) Leftovers {
	t.Helper()
	l := Leftovers{IDs: ids}
	keeper := "runmill-keeper-" + strconv.Itoa(pid) + "-"
	for _, p := range procs() {
		if len(p.args) > 0 && filepath.Base(p.args[0]) == "containerd-shim-runc-v2" && p.state != 'Z' && strings.HasPrefix(arg(p.args, "-id"), keeper) {
			l.Shims = append(l.Shims, p.pid)
			l.IDs = appendNew(l.IDs, arg(p.args, "-id"))
		}
	}
	for _, p := range procs() {
		for _, sh := range l.Shims {
			if p.ppid == sh && p.state != 'Z' {
				l.Procs = append(l.Procs, p.pid)
				if cg := cgroupID(p.pid); cg != "" {
					l.IDs = appendNew(l.IDs, cg)
				}
			}
		}
	}
	return l
}

// Remaining lists what of the leftovers still exists: live (not zombie)
// processes, mounts in a task's bundle (its root), and task cgroups.
func (l Leftovers) Remaining() []string {
	var out []string
	for _, pid := range append(append([]int(nil), l.Shims...), l.Procs...) {
		if p, ok := readProc(pid); ok && p.state != 'Z' {
			out = append(out, fmt.Sprintf("process %d %q", pid, strings.Join(p.args, " ")))
		}
	}
	points, _ := mountinfo.Self()
	for _, id := range l.IDs {
		for _, mp := range points {
			if strings.Contains(mp, "/"+id+"/") {
				out = append(out, "mount "+mp)
			}
		}
		for _, pat := range []string{"/sys/fs/cgroup/*/" + sandbox.DefaultNamespace + "/" + id, "/sys/fs/cgroup/" + sandbox.DefaultNamespace + "/" + id} {
			dirs, _ := filepath.Glob(pat)
			for _, d := range dirs {
				out = append(out, "cgroup "+d)
			}
		}
	}
	return out
}

// ForgetContainers deletes the container records of ids from containerd
// at address and nothing else, as the client's Delete does when it cannot
// look the task up: what made a killed run's leftovers unremovable through
// containerd (issue #23).
func ForgetContainers(t testing.TB, address string, ids []string) {
	t.Helper()
	c, err := containerd.New(address)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := namespaces.WithNamespace(context.Background(), sandbox.DefaultNamespace)
	for _, id := range ids {
		if err := c.ContainerService().Delete(ctx, id); err != nil {
			t.Fatalf("deleting the record of container %s: %v", id, err)
		}
	}
}

type proc struct {
	pid, ppid int
	state     byte
	args      []string
}

func procs() []proc {
	entries, _ := os.ReadDir("/proc")
	var out []proc
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			if p, ok := readProc(pid); ok {
				out = append(out, p)
			}
		}
	}
	return out
}

func readProc(pid int) (proc, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return proc{}, false
	}
	end := strings.LastIndexByte(string(b), ')')
	if end < 0 {
		return proc{}, false
	}
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 2 {
		return proc{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return proc{pid: pid, ppid: ppid, state: f[0][0], args: strings.Split(strings.TrimSuffix(string(cmd), "\x00"), "\x00")}, true
}

func arg(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// cgroupID is the container id a task process's cgroup names
// ("/runmill/<id>"), "" for another cgroup.
func cgroupID(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	for _, line := range strings.Split(string(b), "\n") {
		if parts := strings.SplitN(line, ":", 3); len(parts) == 3 {
			if id, ok := strings.CutPrefix(parts[2], "/"+sandbox.DefaultNamespace+"/"); ok && !strings.Contains(id, "/") {
				return id
			}
		}
	}
	return ""
}

func appendNew(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

// TaskOf is the container id of the task process pid runs in ("" when it
// is in no task's cgroup).
func TaskOf(pid int) string { return cgroupID(pid) }
