package sandbox

import (
	"path/filepath"
	"slices"
	"time"

	"github.com/runmill/verify/internal/procfs"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// DisableOuterTimerUnsafe turns off Run's own wall-clock timer until restore
// is called, so a test can show that the in-task init alone ends a task at
// its limit. Never for a real run: the outer timer is what records the
// timeout promptly.
func DisableOuterTimerUnsafe() (restore func()) {
	outerTimerOff.Store(true)
	return func() { outerTimerOff.Store(false) }
}

// SharedCgroupUnsafe places tasks prepared until restore in containerd's
// default group, as before the run parents, for the benchmark comparing
// the two. Never for a real run: the probe refuses that placement.
func SharedCgroupUnsafe() (restore func()) {
	sharedCgroup.Store(true)
	return func() { sharedCgroup.Store(false) }
}

// TaskAnnotations are the annotations s gives every task's spec (its owner
// and its state directory), for a test to make a bundle s would have made.
func TaskAnnotations(s *Sandbox) map[string]string {
	spec := &specs.Spec{}
	s.annotate(spec, false)
	return spec.Annotations
}

// BundleDir is where s's private containerd keeps its tasks' bundles, ""
// with a shared containerd.
func BundleDir(s *Sandbox) string {
	if s.private == nil {
		return ""
	}
	return filepath.Join(s.private.dir, "state", runtimeV2, s.namespace)
}

// SetReapWait sets how long the sweep waits for what it removes to go,
// returning the previous bound.
func SetReapWait(d time.Duration) time.Duration {
	old := reapWait
	reapWait = d
	return old
}

// DaemonBinary is the containerd a private daemon runs and the PATH it is
// given, for a test that restarts a killed run's daemon on its own
// configuration.
func DaemonBinary() (bin, path string, err error) { return daemonBinary() }

// CgroupV2HelperEnv and CgroupV2Helper: TestMain runs the helper of
// TestProbeReadsCgroupV2 when the variable is set.
const CgroupV2HelperEnv = cgroupV2HelperEnv

func CgroupV2Helper() int { return cgroupV2Helper() }

// UMLInitEnv and UMLInit: TestMain is the init of TestProbeReadsCgroupV2InUML's
// user-mode kernel when the variable is set.
const UMLInitEnv = umlInitEnv

func UMLInit() int { return umlInit() }

// RunCgroup is s's run parent: its cgroup path and its directory in each
// hierarchy it is made in (cgroup v2's, or v1's cpu, memory and pids),
// the cpu one first, and the file holding its CPU weight.
func RunCgroup(s *Sandbox) (cgroup string, dirs []string, weightFile string) {
	return s.cgroup.path, placedDirs(s.cgroup, s.cgroup.path), s.cgroup.weightFile
}

// RunCgroupsParent is the cgroup holding s's run parent and those of other
// runs, as directories in the same hierarchies as RunCgroup's.
func RunCgroupsParent(s *Sandbox) []string { return placedDirs(s.cgroup, s.cgroup.parent) }

func placedDirs(r *runCgroup, cgroup string) []string {
	var dirs []string
	for _, c := range placedControllers {
		for _, m := range r.mounts {
			if m.V2 == r.v2 && (r.v2 || slices.Contains(m.Controllers, c)) {
				if d, ok := cgroupDir(m, cgroup); ok && !slices.Contains(dirs, d) {
					dirs = append(dirs, d)
				}
				break
			}
		}
	}
	return dirs
}

// RunCgroupName is the name a run parent of owner (an ownerID) gets.
func RunCgroupName(owner, instance string) string {
	return runCgroupPrefix + ownerCgroupName(owner) + "-" + instance
}

// TaskCgroup is where the host sees a prepared task's process: its cgroup
// (the cpu controller's on cgroup v1).
func TaskCgroup(t *Task) string {
	key := "cpu"
	if t.s.cgroup.v2 {
		key = ""
	}
	return procfs.CgroupsByController(int(t.task.Pid()))[key]
}

// CgroupPlaceHelperEnv and CgroupPlaceHelper: TestMain runs the helper of
// TestPlaceRunOnCgroupV2 when the variable is set.
const CgroupPlaceHelperEnv = cgroupPlaceHelperEnv

func CgroupPlaceHelper() int { return cgroupPlaceHelper() }
