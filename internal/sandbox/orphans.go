package sandbox

// Orphans: what a killed runmill of this state directory left that
// containerd has forgotten, or failed to remove (issue #23: a sweep dropped
// the records of a killed run's keeper and check task while their shim,
// the keeper's `runc init` and both tmpfs roots lived on; every later
// sweep found the bundles mounted and failed, RM-SANDBOX-006, for good). Such a task is found by what the kernel and
// the bundle still say — never by containerd alone — and only when it is
// provably this state directory's and its runmill is dead: its processes,
// its shim, its mounts, its cgroups, runc's state and the bundle are then
// removed here.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/runmill/verify/internal/bounded"
	"github.com/runmill/verify/internal/mountinfo"
	"github.com/runmill/verify/internal/procfs"
)

// annotationState names, in every task's spec and so in its bundle's
// config.json, the sandbox working directory of the runmill that made it;
// labelOwner, the container label's key, names that runmill there too.
// Unlike labels, annotations outlive containerd's record of the container.
const annotationState = "dev.runmill.sandbox/state"

// shimBinary is the runc shim's executable, the only runtime runmill uses.
const shimBinary = "containerd-shim-runc-v2"

// reapWait bounds each wait of the reaping: for killed processes to exit,
// and for containerd to clean up after the shims it lost.
var reapWait = 5 * time.Second

// annotate marks a task's spec with this process and this state directory,
// and with the shim group when the task shares the keeper's shim.
func (s *Sandbox) annotate(spec *specs.Spec, grouped bool) {
	spec.Annotations = map[string]string{labelOwner: s.owner, annotationState: s.workDir}
	if grouped {
		spec.Annotations[shimGroupAnnotation] = s.shimGroup()
	}
}

// specOwner returns the runmill that made a task's spec, and whether it
// made it for this state directory. A spec from before the annotations is
// recognised by its generated /etc files, which lie in this state
// directory's per-owner etc/PID-START directory.
func (s *Sandbox) specOwner(spec *specs.Spec) (owner string, here bool) {
	if a := spec.Annotations; a[annotationState] != "" {
		return a[labelOwner], a[annotationState] == s.workDir
	}
	etc := filepath.Join(s.workDir, "etc") + "/"
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return "", false
	}
	for _, m := range spec.Mounts {
		if rest, ok := strings.CutPrefix(m.Source, etc); ok {
			dir, _, _ := strings.Cut(rest, "/")
			if pid, start, ok := strings.Cut(dir, "-"); ok {
				return ns + "/" + pid + "/" + start, true
			}
		}
	}
	return "", false
}

// leftover is one task of a dead runmill of this state directory that
// containerd no longer knows or could not remove.
type leftover struct {
	id     string
	bundle string // its bundle under containerd's state directory, "" when gone
	cgroup string // its cgroup's path in every hierarchy, "" when unknown
	init   int    // its init process (init.pid), 0 when unknown
}

// orphans lists the bundles of tasks made for this state directory by a
// runmill that is dead, whose container containerd no longer knows — or
// is in stuck: containerd knows it and failed to remove it.
func (s *Sandbox) orphans(ctx context.Context, roots []string, stuck map[string]containerd.Container) []leftover {
	var out []leftover
	for _, root := range roots {
		dir := filepath.Join(root, s.namespace)
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			id, bundle := e.Name(), filepath.Join(dir, e.Name())
			spec, err := bundleSpec(bundle)
			if err != nil {
				continue // not a task's bundle (containerd's root-side work directory): sweepBundles'
			}
			if _, forced := stuck[id]; !forced {
				if _, err := s.client.LoadContainer(ctx, id); !errdefs.IsNotFound(err) {
					continue // containerd knows it (the container sweep's), or cannot say
				}
			}
			owner, here := s.specOwner(spec)
			if !here || owner == s.owner {
				continue
			}
			if alive, known := ownerAlive(owner); alive || !known {
				continue
			}
			l := leftover{id: id, bundle: bundle, cgroup: cgroupOf(spec)}
			if b, err := bounded.ReadFile(filepath.Join(bundle, "init.pid"), 32); err == nil {
				l.init, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			}
			out = append(out, l)
		}
	}
	return out
}

// strays are the shims of this state directory's private containerd that
// serve no container it knows, with the tasks they still hold: what is
// left when containerd forgot a container and then restarted (it deletes
// such a bundle at start, unmounting its root, but leaves its shim and the
// shim's processes running). Only this runmill uses its private containerd
// (the daemon's lock), so such a shim can be no live runmill's. Without a
// private containerd nothing is judged here: a shim of a shared containerd
// whose bundle is gone names no state directory.
func (s *Sandbox) strays(ctx context.Context, all []proc) (shims []int, tasks []leftover) {
	if s.private == nil {
		return nil, nil
	}
	known := func(id string) bool {
		_, err := s.client.LoadContainer(ctx, id)
		return !errdefs.IsNotFound(err)
	}
	for _, p := range all {
		if !p.isShim(s.namespace) || p.flag("address") != s.private.address || known(p.flag("id")) {
			continue
		}
		var held []leftover
		served := false
		for _, c := range all {
			if c.PPID != p.PID || c.Exited() {
				continue
			}
			// A task's process is in the cgroup made for it (under a
			// run's parent, or containerd's /<namespace>/<id>); anything
			// else is no task of ours.
			cg := c.cgroup()
			id, ok := CgroupTask(cg)
			if !ok || known(id) {
				served = true
				break
			}
			held = append(held, leftover{id: id, cgroup: cg, init: c.PID})
		}
		if served {
			continue
		}
		shims, tasks = append(shims, p.PID), append(tasks, held...)
	}
	return shims, tasks
}

// reap ends every process of the tasks and the shims serving them, then
// removes their mounts, cgroups, runc state and bundles. A shim is killed
// only once none of its processes is left alive: one still serving
// something else is reported and left.
func (s *Sandbox) reap(ctx context.Context, tasks []leftover, shims []int, all []proc) (removed []string, errs []error) {
	byPID := map[int]proc{}
	for _, p := range all {
		byPID[p.PID] = p
	}
	for _, t := range tasks {
		if sh, ok := byPID[byPID[t.init].PPID]; ok && t.init != 0 && sh.isShim(s.namespace) {
			shims = append(shims, sh.PID)
		}
		for _, p := range all {
			if p.isShim(s.namespace) && (p.flag("id") == t.id || t.bundle != "" && p.cwd() == t.bundle) {
				shims = append(shims, p.PID)
			}
		}
	}
	slices.Sort(shims)
	shims = slices.Compact(shims)
	roots, _ := mountinfo.CgroupRoots()

	// The tasks' processes: every member of each task's cgroup, and its
	// init (killing a pid namespace's init ends the namespace).
	var killed []*pinned
	for _, t := range tasks {
		pids := cgroupProcs(roots, t.cgroup)
		if t.init != 0 && !slices.Contains(pids, t.init) {
			pids = append(pids, t.init)
		}
		for _, pid := range pids {
			p, err := pin(pid, func(p proc) bool {
				return t.cgroup != "" && p.inCgroup(t.cgroup) || pid == t.init && slices.Contains(shims, p.PPID)
			})
			if err != nil {
				errs = append(errs, err)
			}
			if p == nil {
				continue
			}
			if err := p.kill(); err != nil {
				errs = append(errs, err)
			}
			killed = append(killed, p)
			removed = append(removed, fmt.Sprintf("process %d (%s) of task %s", p.pid, p.name, t.id))
		}
	}
	errs = append(errs, waitAll(ctx, killed)...)

	killed = nil
	for _, pid := range shims {
		p, err := pin(pid, func(p proc) bool { return p.isShim(s.namespace) })
		if err != nil {
			errs = append(errs, err)
		}
		if p == nil {
			continue
		}
		if busy := liveChildren(pid); len(busy) > 0 {
			p.close()
			errs = append(errs, fmt.Errorf("shim %d still runs processes %v that are not a dead run's; left in place", pid, busy))
			continue
		}
		if err := p.kill(); err != nil {
			errs = append(errs, err)
		}
		killed = append(killed, p)
		removed = append(removed, fmt.Sprintf("shim %d", pid))
	}
	errs = append(errs, waitAll(ctx, killed)...)

	// A containerd that still holds the tasks cleans up after the shims
	// it lost (runc delete, the root unmounted, the bundle removed); give
	// it the chance, then remove whatever it did not.
	deadline := time.Now().Add(reapWait)
	for _, t := range tasks {
		for t.bundle != "" && exists(t.bundle) && time.Now().Before(deadline) && ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, t := range tasks {
		r, e := s.removeRemains(t, roots)
		removed, errs = append(removed, r...), append(errs, e...)
	}
	return removed, errs
}

// removeRemains removes what of a task outlives its processes: mounts
// under its bundle (its root), its cgroup in every hierarchy, runc's state
// of it, and the bundle with containerd's work directory for it.
func (s *Sandbox) removeRemains(t leftover, roots []string) (removed []string, errs []error) {
	if t.bundle != "" {
		unmounted, err := mountinfo.UnmountUnder(t.bundle)
		for _, p := range unmounted {
			removed = append(removed, "mount "+p)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if t.cgroup != "" {
		for _, root := range roots {
			dir := filepath.Join(root, t.cgroup)
			if err := os.Remove(dir); err == nil {
				removed = append(removed, "cgroup "+dir)
			} else if !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("removing cgroup %s: %w", dir, err))
			}
		}
	}
	if state := filepath.Join(s.runcRoot(t.bundle), s.namespace, t.id); validID(t.id) && exists(state) {
		if err := os.RemoveAll(state); err != nil {
			errs = append(errs, err)
		} else {
			removed = append(removed, "runc state "+state)
		}
	}
	if t.bundle != "" && exists(t.bundle) {
		if left, _ := mountinfo.Under(t.bundle); len(left) > 0 {
			return removed, append(errs, fmt.Errorf("task bundle %s: still mounted at %s; left in place", t.bundle, strings.Join(left, ", ")))
		}
		work, _ := os.Readlink(filepath.Join(t.bundle, "work"))
		if err := os.RemoveAll(t.bundle); err != nil {
			return removed, append(errs, err)
		}
		removed = append(removed, "task bundle "+t.bundle)
		// containerd's root-side directory of the task: exactly …/<namespace>/<id>.
		if filepath.Base(work) == t.id && filepath.Base(filepath.Dir(work)) == s.namespace && exists(work) {
			if err := os.RemoveAll(work); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) == 0 {
		// What containerd removed itself once the shim was gone is not
		// listed above; this says the task as a whole is.
		removed = append(removed, "orphaned task "+t.id)
	}
	return removed, errs
}

// runcRoot is runc's state root for a task: the one its bundle's shim
// options name, else a private containerd's, else the shim's default.
func (s *Sandbox) runcRoot(bundle string) string {
	var o struct {
		Root string `json:"root"`
	}
	if bundle != "" {
		if b, err := bounded.ReadFile(filepath.Join(bundle, "options.json"), 1<<16); err == nil && json.Unmarshal(b, &o) == nil && filepath.IsAbs(o.Root) {
			return o.Root
		}
	}
	if s.private != nil {
		return filepath.Join(s.private.dir, "runc")
	}
	return "/run/containerd/runc"
}

// bundleSpec reads a task bundle's runtime spec.
func bundleSpec(bundle string) (*specs.Spec, error) {
	b, err := bounded.ReadFile(filepath.Join(bundle, "config.json"), 4<<20)
	if err != nil {
		return nil, err
	}
	var spec specs.Spec
	if err := json.Unmarshal(b, &spec); err != nil {
		return nil, err
	}
	return &spec, nil
}

// cgroupOf is a spec's cgroup path when it is a plain absolute one (the
// task's own under its run's parent, or containerd's "/<namespace>/<id>"),
// "" otherwise.
func cgroupOf(spec *specs.Spec) string {
	if spec.Linux == nil {
		return ""
	}
	p := spec.Linux.CgroupsPath
	if !strings.HasPrefix(p, "/") || filepath.Clean(p) != p || p == "/" {
		return ""
	}
	return p
}

// validID: a container id usable as one path element.
func validID(id string) bool {
	return id != "" && id != "." && id != ".." && !strings.ContainsAny(id, "/\x00")
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// cgroupProcs lists the processes of a cgroup in every hierarchy.
func cgroupProcs(roots []string, cgroup string) []int {
	if cgroup == "" {
		return nil
	}
	var out []int
	for _, root := range roots {
		b, err := bounded.ReadFile(filepath.Join(root, cgroup, "cgroup.procs"), 1<<20)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 0 && !slices.Contains(out, pid) {
				out = append(out, pid)
			}
		}
	}
	return out
}

// proc is one process, with what the sweep asks of it.
type proc struct{ procfs.Process }

// processes lists every process /proc shows.
func processes() []proc {
	var out []proc
	for _, p := range procfs.All() {
		out = append(out, proc{p})
	}
	return out
}

// isShim: a runc shim (not a zombie) serving the containerd namespace ns.
// containerd also runs the shim binary briefly with an action as its last
// argument: `start` (which forks the serving shim and exits) and `delete`
// (its clean-up after a shim it lost, running `runc delete` as its child).
// Such a run serves no task: it is containerd's own clean-up of what a
// sweep reaps, and taking it for a serving shim made the sweep refuse its
// `runc delete` child as a process of no dead run.
func (p proc) isShim(ns string) bool {
	if p.Exited() || len(p.Args) == 0 || filepath.Base(p.Args[0]) != shimBinary || p.flag("namespace") != ns {
		return false
	}
	action := p.Args[len(p.Args)-1]
	return action != "start" && action != "delete"
}

// flag is the value of a Go-style flag (-name value, -name=value) in the
// process's arguments.
func (p proc) flag(name string) string {
	for i, a := range p.Args {
		a = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if a == name && i+1 < len(p.Args) && len(p.Args[i]) > len(a) {
			return p.Args[i+1]
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

// cwd is the process's working directory (a shim's is its first task's
// bundle), without the " (deleted)" the kernel adds to a removed one.
func (p proc) cwd() string {
	d, _ := os.Readlink("/proc/" + strconv.Itoa(p.PID) + "/cwd")
	return strings.TrimSuffix(d, " (deleted)")
}

// cgroup is the process's cgroup path, in the first hierarchy that does not
// hold it at the root (a task's is the same in every hierarchy).
func (p proc) cgroup() string {
	cgs := slices.DeleteFunc(procfs.Cgroups(p.PID), func(c string) bool { return c == "/" })
	if len(cgs) == 0 {
		return ""
	}
	return cgs[0]
}

// inCgroup: the process is in cgroup (or below it) in some hierarchy.
func (p proc) inCgroup(cgroup string) bool {
	return slices.ContainsFunc(procfs.Cgroups(p.PID), func(c string) bool { return c == cgroup || strings.HasPrefix(c, cgroup+"/") })
}

// liveChildren are a process's children that have not exited.
func liveChildren(pid int) []int {
	var out []int
	for _, p := range processes() {
		if p.PPID == pid && !p.Exited() {
			out = append(out, p.PID)
		}
	}
	return out
}

// pinned is a process held by a pidfd: a signal through it reaches that
// process and never one that reused its pid.
type pinned struct {
	pid, fd int
	name    string
}

// pin holds pid's process if, once held, it still satisfies ok (checked
// after the pidfd is open, so the process checked is the process held).
// It returns nil for a process that is gone, exited or fails ok.
func pin(pid int, ok func(proc) bool) (*pinned, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err == unix.ESRCH {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	p, found := procfs.Read(pid)
	if !found || p.Exited() || !ok(proc{p}) {
		unix.Close(fd)
		return nil, nil
	}
	return &pinned{pid: pid, fd: fd, name: p.Name}, nil
}

func (p *pinned) kill() error {
	if err := unix.PidfdSendSignal(p.fd, unix.SIGKILL, nil, 0); err != nil && err != unix.ESRCH {
		return fmt.Errorf("killing %d (%s): %w", p.pid, p.name, err)
	}
	return nil
}

func (p *pinned) close() { unix.Close(p.fd) }

// waitAll waits (reapWait at most, and not past ctx) for every pinned
// process to exit — a pidfd turns readable on exit, a zombie no one reaps
// included — and releases them.
func waitAll(ctx context.Context, ps []*pinned) []error {
	var errs []error
	deadline := time.Now().Add(reapWait)
	for _, p := range ps {
		var err error = fmt.Errorf("process %d (%s) did not exit within %s of SIGKILL", p.pid, p.name, reapWait)
		for time.Now().Before(deadline) && ctx.Err() == nil {
			// Short polls, so a cancelled sweep stops waiting at once.
			n, perr := unix.Poll([]unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLIN}}, 50)
			if n > 0 {
				err = nil
				break
			}
			if perr != nil && perr != unix.EINTR {
				err = fmt.Errorf("waiting for process %d (%s): %w", p.pid, p.name, perr)
				break
			}
		}
		if err != nil {
			errs = append(errs, err)
		}
		p.close()
	}
	return errs
}
