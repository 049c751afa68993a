package cli

import (
	"fmt"
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
	sb, missing, stop, err := sandboxtest.Start("the doctor tests")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	if noSandbox = missing; sb != nil {
		containerdAddress = sb.Address()
	}
	return m.Run()
}

func needContainerd(t *testing.T) {
	t.Helper()
	if containerdAddress == "" {
		t.Skip(noSandbox)
	}
}
