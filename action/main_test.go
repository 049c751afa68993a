package action_test

import (
	"os"
	"testing"

	"github.com/runmill/verify/internal/sandbox/sandboxtest"
)

// The action's verify step runs the real runmill against a real containerd:
// the one at $RUNMILL_CONTAINERD_ADDRESS, else the system socket, else a
// private daemon this harness starts (as root). With CI=true a missing
// containerd fails instead of skipping.
var (
	containerdAddress string
	noSandbox         string
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	code := sandboxtest.Main(m, "the action tests", &containerdAddress, &noSandbox)
	// The runmill the Build step installed for the tests that stand in for
	// it (prepare_test.go); every job's own is removed by its gate step.
	if shared.home != "" {
		os.RemoveAll(shared.home)
	}
	if caches.dir != "" {
		os.RemoveAll(caches.dir)
	}
	return code
}
