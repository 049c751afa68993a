package sandbox

import (
	"path/filepath"
	"time"

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
