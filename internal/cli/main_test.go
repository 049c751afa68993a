package cli

import (
	"os"
	"testing"

	"github.com/runmill/verify/internal/sandbox/sandboxtest"
)

// The doctor's containerd and sandbox checks run against a real containerd
// with runc: RUNMILL_CONTAINERD_ADDRESS, else the system socket, else a
// private daemon started here. With CI=true a missing containerd fails.
var (
	containerdAddress string
	noSandbox         string
)

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	return sandboxtest.Main(m, "the doctor tests", &containerdAddress, &noSandbox)
}

func needContainerd(t *testing.T) {
	t.Helper()
	if containerdAddress == "" {
		t.Skip(noSandbox)
	}
}
