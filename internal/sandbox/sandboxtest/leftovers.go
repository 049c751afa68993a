package sandboxtest

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"

	"github.com/runmill/verify/internal/mountinfo"
	"github.com/runmill/verify/internal/procfs"
	"github.com/runmill/verify/internal/sandbox"
)

// Leftovers are what a runmill killed with SIGKILL left of its sandbox, as
// the kernel shows it: the runc shims that served it (found by its shim
// keeper's id, which names the runmill's pid), their live children (the
// keeper's `runc init`, a check's init), and its tasks' container ids.
type Leftovers struct {
	PID          int // the killed runmill
	Shims, Procs []int
	IDs          []string
}

// LeftBy finds what the killed runmill pid left; ids are task ids the
// caller knows of (a check whose processes are already gone has none).
func LeftBy(t testing.TB, pid int, ids ...string) Leftovers {
	t.Helper()
	l := Leftovers{PID: pid, IDs: ids}
	keeper := "runmill-keeper-" + strconv.Itoa(pid) + "-"
	all := procfs.All()
	for _, p := range all {
		if len(p.Args) > 0 && filepath.Base(p.Args[0]) == "containerd-shim-runc-v2" && !p.Exited() && strings.HasPrefix(arg(p.Args, "-id"), keeper) {
			l.Shims = append(l.Shims, p.PID)
			l.IDs = appendNew(l.IDs, arg(p.Args, "-id"))
		}
	}
	for _, p := range all {
		if slices.Contains(l.Shims, p.PPID) && !p.Exited() {
			l.Procs = append(l.Procs, p.PID)
			if id := cgroupID(p.PID); id != "" {
				l.IDs = appendNew(l.IDs, id)
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
		if p, ok := procfs.Read(pid); ok && !p.Exited() {
			out = append(out, fmt.Sprintf("process %d %q", pid, strings.Join(p.Args, " ")))
		}
	}
	points, _ := mountinfo.Self()
	for _, id := range l.IDs {
		for _, mp := range points {
			if strings.Contains(mp, "/"+id+"/") {
				out = append(out, "mount "+mp)
			}
		}
		// The task's cgroup under its run's parent, which lies beside the
		// runmill's own cgroup (at most a few levels down), or containerd's
		// default group.
		var pats []string
		for _, under := range []string{"/sys/fs/cgroup/", "/sys/fs/cgroup/*/", "/sys/fs/cgroup/*/*/", "/sys/fs/cgroup/*/*/*/"} {
			pats = append(pats, under+"runmill-run-*/"+id, under+sandbox.DefaultNamespace+"/"+id)
		}
		for _, pat := range pats {
			dirs, _ := filepath.Glob(pat)
			for _, d := range dirs {
				out = append(out, "cgroup "+d)
			}
		}
	}
	return append(out, RunCgroupsOf(l.PID)...)
}

// RunCgroupsOf lists the run parent cgroups named for runmill pid
// ("runmill-run-NS-PID-START-INSTANCE") that exist, as "cgroup <dir>",
// beside a runmill's own cgroup a few levels down at most.
func RunCgroupsOf(pid int) []string {
	var out []string
	for _, under := range []string{"/sys/fs/cgroup/", "/sys/fs/cgroup/*/", "/sys/fs/cgroup/*/*/", "/sys/fs/cgroup/*/*/*/"} {
		dirs, _ := filepath.Glob(under + "runmill-run-*")
		for _, d := range dirs {
			if f := strings.Split(strings.TrimPrefix(filepath.Base(d), "runmill-run-"), "-"); len(f) == 4 && f[1] == strconv.Itoa(pid) {
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

func arg(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// cgroupID is the container id a task process's cgroup names, "" for
// another cgroup.
func cgroupID(pid int) string {
	for _, cg := range procfs.Cgroups(pid) {
		if id, ok := sandbox.CgroupTask(cg); ok {
			return id
		}
	}
	return ""
}

func appendNew(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

// TaskOf is the container id of the task process pid runs in ("" when it
// is in no task's cgroup).
func TaskOf(pid int) string { return cgroupID(pid) }
