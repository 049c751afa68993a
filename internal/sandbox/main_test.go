package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/runmill/verify/internal/sandbox"
	"github.com/runmill/verify/internal/testreq"
)

// The integration tests run against a real containerd with runc: the one at
// $RUNMILL_CONTAINERD_ADDRESS, else the system socket, else a private
// containerd this harness starts (as root, with containerd installed). With
// CI=true a missing containerd fails the package instead of skipping it.
var (
	sb         *sandbox.Sandbox
	stateDir   string
	skipReason string
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(helperMain())
	}
	if os.Getenv(sandbox.UMLInitEnv) != "" {
		os.Exit(sandbox.UMLInit())
	}
	if os.Getenv(sandbox.CgroupV2HelperEnv) != "" {
		os.Exit(sandbox.CgroupV2Helper())
	}
	if os.Getenv(sandbox.CgroupPlaceHelperEnv) != "" {
		os.Exit(sandbox.CgroupPlaceHelper())
	}
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	// A short path: the private daemon's socket lives under it and unix
	// socket paths are limited to 107 bytes.
	state, err := os.MkdirTemp("", "rmsb-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(state)
	stateDir = state
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sb, err = sandbox.Connect(ctx, sandbox.Options{Address: os.Getenv("RUNMILL_CONTAINERD_ADDRESS"), StateDir: state})
	if err != nil {
		if testreq.CI() {
			fmt.Fprintf(os.Stderr, "FAIL: CI=true and no containerd for the sandbox integration tests: %v\n", err)
			return 1
		}
		skipReason = fmt.Sprintf("no containerd for the sandbox integration tests (set RUNMILL_CONTAINERD_ADDRESS, or run as root with containerd and runc installed): %v", err)
	}
	code := m.Run()
	if sb != nil {
		if err := sb.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "closing sandbox:", err)
			code = 1
		}
	}
	return code
}

// needSandbox skips (or, under CI, has already failed) without containerd.
func needSandbox(tb testing.TB) *sandbox.Sandbox {
	tb.Helper()
	if sb == nil {
		tb.Skip(skipReason)
	}
	return sb
}
