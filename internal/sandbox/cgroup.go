package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/runmill/verify/internal/mountinfo"
	"github.com/runmill/verify/internal/procfs"
	"github.com/runmill/verify/pkg/rmerr"
)

// Where a run's tasks sit in the cgroup tree.
//
// Left to containerd, every task lands at /<namespace>/<id>: one group,
// /runmill, at the root of each hierarchy, holding the tasks of every
// runmill on the machine and weighted under CFS as one process against
// everything else. On a shared runner a check then gets a fraction of the
// CPU the command it replaces would get (docs/benchmarks.md: at load 32 a
// second of CPU took 12.6–13.6 s in that group, 3.3–11.3 s at the root).
// Instead each run gets a parent cgroup of its own, beside runmill's own
// cgroup (where the job's other processes are), weighted as many ordinary
// processes as the machine has cores, since a test suite runs about that
// many at once; each task is a cgroup below it.

const (
	runCgroupPrefix  = "runmill-run-"
	selfCgroupPrefix = "runmill-self-"
)

// placedControllers are the controllers a task's limits need (pids.max,
// memory.max, cpu.max and the weight).
var placedControllers = []string{"cpu", "memory", "pids"}

// The CPU weight of one cgroup left at its default (what one ordinary
// process's cgroup weighs), and the largest the kernel accepts.
const (
	v1DefaultShares = 1024
	v1MaxShares     = 262144
	v2DefaultWeight = 100
	v2MaxWeight     = 10000
)

// cgroupHost is what the placement is decided from: the hierarchies, this
// process's cgroups and who else is in them.
type cgroupHost struct {
	v2     bool // unified: /sys/fs/cgroup is cgroup2, every controller there
	mounts []mountinfo.CgroupMount
	// self is this process's cgroup by controller (v1: every controller
	// of a line; v2: ""), from /proc/self/cgroup.
	self  map[string]string
	pid   int
	owner string // ownerID(): names the cgroups made for this process
	// ours: pid is this process or one it started (a git child of the
	// engine, still running while the sandbox connects).
	ours func(pid int) bool
}

// runCgroup is one run's parent cgroup.
type runCgroup struct {
	path   string // cgroup path, the same in every hierarchy: "<parent>/runmill-run-…"
	parent string // the cgroup holding it, and the parents of other runs (swept)
	v2     bool
	// weightFile in the cpu hierarchy holds weight: cores × one process's.
	weightFile, weight string
	mounts             []mountinfo.CgroupMount
	// moved is the leaf this process moved itself into on cgroup v2 to
	// give its own cgroup's controllers to the runs, "" when it did not.
	moved string
}

func cgroupUnified() bool {
	var st unix.Statfs_t
	return unix.Statfs("/sys/fs/cgroup", &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC
}

func readCgroupHost(owner string) (cgroupHost, error) {
	h := cgroupHost{v2: cgroupUnified(), pid: os.Getpid(), owner: owner, ours: startedBySelf}
	var err error
	if h.mounts, err = mountinfo.CgroupMounts(); err != nil {
		return h, err
	}
	if h.self = procfs.CgroupsByController(h.pid); h.self == nil {
		return h, errors.New("/proc/self/cgroup cannot be read")
	}
	return h, nil
}

// startedBySelf: pid is this process or a descendant of it.
func startedBySelf(pid int) bool {
	self := os.Getpid()
	for range 64 {
		if pid == self {
			return true
		}
		p, ok := procfs.Read(pid)
		if !ok || p.PPID <= 1 {
			return false
		}
		pid = p.PPID
	}
	return false
}

// cgroupDir is the directory of a cgroup path in a mounted hierarchy, false
// when the mount does not show it.
func cgroupDir(m mountinfo.CgroupMount, cgroup string) (string, bool) {
	rel, ok := strings.CutPrefix(cgroup, m.Root)
	if m.Root == "/" {
		rel, ok = cgroup, strings.HasPrefix(cgroup, "/")
	} else if ok && rel != "" && !strings.HasPrefix(rel, "/") {
		ok = false
	}
	if !ok {
		return "", false
	}
	return filepath.Join(m.Mountpoint, filepath.FromSlash(rel)), true
}

func (h cgroupHost) mount(controller string) (mountinfo.CgroupMount, bool) {
	for _, m := range h.mounts {
		if controller == "" && m.V2 || controller != "" && !m.V2 && slices.Contains(m.Controllers, controller) {
			return m, true
		}
	}
	return mountinfo.CgroupMount{}, false
}

// ownerCgroupName turns an owner ("pid:[NS]/PID/START") into a name part
// ("NS-PID-START"): the pid namespace is in it, since a pid means nothing
// to a sweep in another one.
func ownerCgroupName(owner string) string {
	parts := strings.Split(owner, "/")
	if len(parts) != 3 {
		return "unknown"
	}
	ns := strings.TrimSuffix(strings.TrimPrefix(parts[0], "pid:["), "]")
	return ns + "-" + parts[1] + "-" + parts[2]
}

// cgroupOwner is the owner a run's or self cgroup's name records.
func cgroupOwner(name string) (string, bool) {
	var rest string
	var n int
	if r, ok := strings.CutPrefix(name, runCgroupPrefix); ok {
		rest, n = r, 4
	} else if r, ok := strings.CutPrefix(name, selfCgroupPrefix); ok {
		rest, n = r, 3
	} else {
		return "", false
	}
	parts := strings.Split(rest, "-")
	if len(parts) != n {
		return "", false
	}
	for _, p := range parts[:3] {
		if _, err := strconv.ParseUint(p, 10, 64); err != nil {
			return "", false
		}
	}
	// The instance: randomID's hex, one path element.
	if n == 4 && (parts[3] == "" || strings.Trim(parts[3], "0123456789abcdef") != "") {
		return "", false
	}
	return "pid:[" + parts[0] + "]/" + parts[1] + "/" + parts[2], true
}

// CgroupTask is the container id a task's cgroup path names — its last
// element under a run's parent, or under containerd's default group
// (/runmill/<id>) of a runmill from before the run parents — and false for
// any other cgroup.
func CgroupTask(cgroup string) (string, bool) {
	dir, id := path.Split(cgroup)
	dir = strings.TrimSuffix(dir, "/")
	if !validID(id) {
		return "", false
	}
	if dir == "/"+DefaultNamespace {
		return id, true
	}
	if _, ok := cgroupOwner(path.Base(dir)); ok && strings.HasPrefix(path.Base(dir), runCgroupPrefix) {
		return id, true
	}
	return "", false
}

// parentOf is the cgroup a run's parent goes in: the one holding runmill's
// own (beside it), or runmill's own when the mount shows nothing above it
// (a container's bind of its own subtree, without a cgroup namespace).
func parentOf(m mountinfo.CgroupMount, own string) string {
	p := path.Dir(own)
	if _, ok := cgroupDir(m, p); !ok {
		if _, ok := cgroupDir(m, own); ok {
			return own
		}
	}
	return p
}

// placeRun makes the run's parent cgroup, named for this process and the
// Sandbox's instance, and weighted cpus ordinary processes.
func placeRun(h cgroupHost, instance string, cpus int) (*runCgroup, error) {
	name := runCgroupPrefix + ownerCgroupName(h.owner) + "-" + instance
	if h.v2 {
		return placeV2(h, name, cpus)
	}
	return placeV1(h, name, cpus)
}

func cgroupRefused(format string, args ...any) *rmerr.Error {
	return rmerr.New(rmerr.SandboxUnavailable, "placing the run's sandbox tasks in a cgroup of their own: "+format, args...)
}

// placeV1: the parent is made beside runmill's cpu cgroup (parentOf), at the same path
// in the cpu, memory and pids hierarchies (one path: a task's OCI
// cgroupsPath names one for all). runc makes the others it joins.
func placeV1(h cgroupHost, name string, cpus int) (_ *runCgroup, retErr error) {
	own, ok := h.self["cpu"]
	if !ok {
		return nil, cgroupRefused("/proc/self/cgroup names no cpu cgroup").
			WithHint("mount the cgroup v1 cpu controller (or boot with cgroup v2)")
	}
	cpu, ok := h.mount("cpu")
	if !ok {
		return nil, cgroupRefused("no cgroup v1 hierarchy with the cpu controller is mounted").
			WithHint("mount it (mount -t cgroup -o cpu cgroup /sys/fs/cgroup/cpu)")
	}
	parent := parentOf(cpu, own)
	r := &runCgroup{path: path.Join(parent, name), parent: parent, weightFile: "cpu.shares",
		weight: strconv.Itoa(min(cpus*v1DefaultShares, v1MaxShares)), mounts: h.mounts}
	var made []string
	defer func() {
		if retErr != nil {
			for _, d := range made {
				os.Remove(d)
			}
		}
	}()
	for _, c := range placedControllers {
		m, ok := h.mount(c)
		if !ok {
			return nil, cgroupRefused("no cgroup v1 hierarchy with the %s controller is mounted", c).
				WithHint("mount it (mount -t cgroup -o %s cgroup /sys/fs/cgroup/%s)", c, c)
		}
		dir, ok := cgroupDir(m, r.path)
		if !ok {
			return nil, cgroupRefused("cgroup %s lies outside the %s hierarchy mounted at %s, which shows %s", r.path, c, m.Mountpoint, m.Root).
				WithHint("give runmill a cgroup namespace of its own (docker --cgroupns=private), or mount the whole hierarchy")
		}
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, rmerr.Wrap(rmerr.SandboxUnavailable, err, "creating the run's cgroup %s", dir).
				WithHint("run runmill as root with %s writable", m.Mountpoint)
		}
		made = append(made, dir)
		if c == "cpu" {
			if err := os.WriteFile(filepath.Join(dir, r.weightFile), []byte(r.weight), 0); err != nil {
				return nil, rmerr.Wrap(rmerr.SandboxUnavailable, err, "setting %s of the run's cgroup %s", r.weightFile, dir)
			}
		}
	}
	return r, nil
}

// placeV2: the parent is made beside runmill's own cgroup, with the
// controllers in its subtree_control. The cgroup holding both must give
// them to its children, which the kernel refuses while processes sit in it
// (no internal processes, except at the root): when that cgroup is
// runmill's own (runmill at the root of its cgroup namespace, as in a
// container) and runmill and what it started are all it holds, they move
// to a leaf beside the runs' parents; anyone else's process there is a
// refusal, never moved.
func placeV2(h cgroupHost, name string, cpus int) (_ *runCgroup, retErr error) {
	own, ok := h.self[""]
	m, mounted := h.mount("")
	if !ok || !mounted {
		return nil, cgroupRefused("no cgroup2 hierarchy, or /proc/self/cgroup names no cgroup in it").
			WithHint("mount cgroup2 at /sys/fs/cgroup")
	}
	parent := parentOf(m, own)
	r := &runCgroup{path: path.Join(parent, name), parent: parent, v2: true, weightFile: "cpu.weight",
		weight: strconv.Itoa(min(cpus*v2DefaultWeight, v2MaxWeight)), mounts: h.mounts}
	pdir, ok := cgroupDir(m, parent)
	if !ok {
		return nil, cgroupRefused("cgroup %s lies outside the cgroup2 hierarchy mounted at %s, which shows %s", parent, m.Mountpoint, m.Root).
			WithHint("give runmill a cgroup namespace of its own (docker --cgroupns=private)")
	}
	avail := strings.Fields(readTrim(filepath.Join(pdir, "cgroup.controllers")))
	if missing := without(placedControllers, avail); len(missing) > 0 {
		return nil, cgroupRefused("cgroup %s (%s) does not offer the %s controller(s) to its children", parent, pdir, strings.Join(missing, ", ")).
			WithHint("delegate them to it (systemd: Delegate=yes on runmill's unit; a container: its cgroup with cpu, memory and pids enabled)")
	}
	need := without(placedControllers, strings.Fields(readTrim(filepath.Join(pdir, "cgroup.subtree_control"))))
	if len(need) > 0 {
		moved, err := clearInternalProcesses(h, parent, pdir, own)
		if err != nil {
			return nil, err
		}
		r.moved = moved
		if err := enableControllers(h, pdir, need, moved); err != nil {
			return nil, err
		}
	}
	dir := filepath.Join(pdir, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, rmerr.Wrap(rmerr.SandboxUnavailable, err, "creating the run's cgroup %s", dir).
			WithHint("run runmill as root with %s writable", m.Mountpoint)
	}
	defer func() {
		if retErr != nil {
			os.Remove(dir)
		}
	}()
	if err := os.WriteFile(filepath.Join(dir, r.weightFile), []byte(r.weight), 0); err != nil {
		return nil, rmerr.Wrap(rmerr.SandboxUnavailable, err, "setting %s of the run's cgroup %s", r.weightFile, dir)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(controlLine(placedControllers)), 0); err != nil {
		return nil, rmerr.Wrap(rmerr.SandboxUnavailable, err, "enabling %s for the tasks in %s", strings.Join(placedControllers, ", "), dir)
	}
	return r, nil
}

// clearInternalProcesses empties the cgroup parent of processes, as the
// kernel requires before it gives controllers to its children, and returns
// the leaf this process moved to ("" when nothing had to move). The root
// (no cgroup.type) is exempt.
func clearInternalProcesses(h cgroupHost, parent, pdir, own string) (string, error) {
	if !exists(filepath.Join(pdir, "cgroup.type")) {
		return "", nil
	}
	procs := cgroupPids(pdir)
	if len(procs) == 0 {
		return "", nil
	}
	others := slices.DeleteFunc(slices.Clone(procs), h.ours)
	if parent != own || len(others) > 0 {
		if len(others) == 0 {
			others = procs
		}
		return "", cgroupRefused("cgroup %s (%s) holds processes %v, so the kernel cannot give its cpu, memory and pids controllers to the run's cgroup beside runmill's", parent, pdir, others).
			WithHint("start runmill in a cgroup of its own whose parent holds no process (systemd-run --scope, or a container of its own), or move those processes into a leaf cgroup")
	}
	leaf := path.Join(parent, selfCgroupPrefix+ownerCgroupName(h.owner))
	ldir := filepath.Join(pdir, path.Base(leaf))
	if err := os.Mkdir(ldir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", rmerr.Wrap(rmerr.SandboxUnavailable, err, "creating the leaf cgroup %s for runmill itself", ldir)
	}
	if err := moveProcs(procs, ldir); err != nil {
		return "", err
	}
	return leaf, nil
}

// enableControllers gives the controllers to pdir's children. A child
// runmill started meanwhile (a git process) would make the kernel refuse
// (EBUSY): it is moved after the others and the write tried again.
func enableControllers(h cgroupHost, pdir string, need []string, moved string) error {
	var err error
	for range 5 {
		if err = os.WriteFile(filepath.Join(pdir, "cgroup.subtree_control"), []byte(controlLine(need)), 0); err == nil || !errors.Is(err, unix.EBUSY) || moved == "" {
			break
		}
		procs := cgroupPids(pdir)
		if others := slices.DeleteFunc(slices.Clone(procs), h.ours); len(others) > 0 {
			return cgroupRefused("cgroup %s holds processes %v that are not runmill's", pdir, others).
				WithHint("start runmill in a cgroup of its own whose parent holds no process")
		}
		if err := moveProcs(procs, filepath.Join(pdir, path.Base(moved))); err != nil {
			return err
		}
	}
	if err != nil {
		return rmerr.Wrap(rmerr.SandboxUnavailable, err, "enabling %s for the children of cgroup %s", strings.Join(need, ", "), pdir).
			WithHint("delegate the cgroup to runmill (systemd: Delegate=yes), or run it as root")
	}
	return nil
}

func moveProcs(pids []int, dir string) error {
	for _, pid := range pids {
		err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
		if err != nil && !errors.Is(err, unix.ESRCH) { // exited meanwhile
			return rmerr.Wrap(rmerr.SandboxUnavailable, err, "moving process %d into the leaf cgroup %s", pid, dir)
		}
	}
	return nil
}

func cgroupPids(dir string) []int {
	var out []int
	for _, f := range strings.Fields(readTrim(filepath.Join(dir, "cgroup.procs"))) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			out = append(out, pid)
		}
	}
	return out
}

func controlLine(cs []string) string {
	return "+" + strings.Join(cs, " +")
}

func without(want, have []string) []string {
	return slices.DeleteFunc(slices.Clone(want), func(c string) bool { return slices.Contains(have, c) })
}

// readTrim reads a kernel file of the cgroup hierarchy (its size is
// reported as 0, so no bounded read).
func readTrim(p string) string {
	b, _ := os.ReadFile(p)
	return strings.TrimSpace(string(b))
}

// taskPath is a task's OCI cgroupsPath: a cgroup of its own under the run's
// parent. runc creates it in every hierarchy and removes it with the task.
func (r *runCgroup) taskPath(id string) string { return path.Join(r.path, id) }

// cgroupRemoveWait bounds how long Close waits for a run's cgroups to empty
// (the last processes of a killed task still exiting).
const cgroupRemoveWait = 5 * time.Second

// remove deletes the run's parent, and any task cgroup still below it, in
// every hierarchy, and reports it looked for again.
func (r *runCgroup) remove() (Resource, error) {
	var dirs []string
	for _, m := range r.mounts {
		if d, ok := cgroupDir(m, r.path); ok {
			dirs = append(dirs, d)
		}
	}
	deadline := time.Now().Add(cgroupRemoveWait)
	var errs []error
	for _, d := range dirs {
		for {
			err := removeCgroupTree(d)
			if err == nil || !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
				if err != nil {
					errs = append(errs, fmt.Errorf("removing cgroup %s: %w", d, err))
				}
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	res := Resource{Kind: "cgroup", ID: r.path, Gone: true, Detail: fmt.Sprintf("the run's parent cgroup (%s %s), looked for in %d hierarchies", r.weightFile, r.weight, len(dirs))}
	var left []string
	for _, d := range dirs {
		if exists(d) {
			left = append(left, d)
		}
	}
	if len(left) > 0 {
		res.Gone, res.Detail = false, "the run's parent cgroup: still present at "+strings.Join(left, ", ")
	}
	return res, errors.Join(errs...)
}

// removeCgroupTree removes a cgroup and the cgroups below it, deepest first.
// A cgroup with a process in it cannot be removed (EBUSY); a missing one is
// not an error.
func removeCgroupTree(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := removeCgroupTree(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := unix.Rmdir(dir); err != nil && !errors.Is(err, unix.ENOENT) {
		return err
	}
	return nil
}

// sweep removes the parents (and self leaves) that dead runs left beside
// this run's: pid gone, or reused (the start time differs). A live run's,
// and one named from another pid namespace, are left alone, and so is one
// whose processes are still exiting (the next sweep's).
func (r *runCgroup) sweep(self string) (removed []string, errs []error) {
	for _, m := range r.mounts {
		pdir, ok := cgroupDir(m, r.parent)
		if !ok {
			continue
		}
		entries, err := os.ReadDir(pdir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			owner, ok := cgroupOwner(e.Name())
			if !ok || !e.IsDir() || owner == self {
				continue
			}
			if alive, known := ownerAlive(owner); alive || !known {
				continue
			}
			dir := filepath.Join(pdir, e.Name())
			if err := removeCgroupTree(dir); err != nil {
				if !errors.Is(err, unix.EBUSY) {
					errs = append(errs, fmt.Errorf("removing the cgroup %s of a dead run: %w", dir, err))
				}
				continue
			}
			removed = append(removed, "cgroup "+dir)
		}
	}
	return removed, errs
}

// cgroupSeen is what the probe observed of a task's placement from the
// host, before the task started.
type cgroupSeen struct {
	Task, WantTask     string // the task's cgroup (cpu controller on v1), and where it belongs
	Weight, WantWeight string // the run parent's CPU weight, and what was set
	WeightFile         string
}

// observe reads where task pid is and what the run's parent weighs.
func (r *runCgroup) observe(pid uint32, id string) cgroupSeen {
	seen := cgroupSeen{WantTask: r.taskPath(id), WantWeight: r.weight, WeightFile: r.weightFile}
	key := "cpu"
	if r.v2 {
		key = ""
	}
	seen.Task = procfs.CgroupsByController(int(pid))[key]
	for _, m := range r.mounts {
		if m.V2 == r.v2 && (r.v2 || slices.Contains(m.Controllers, "cpu")) {
			if d, ok := cgroupDir(m, r.path); ok {
				seen.Weight = readTrim(filepath.Join(d, r.weightFile))
			}
			break
		}
	}
	return seen
}
