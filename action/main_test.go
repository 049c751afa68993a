package action_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/runmill/verify/internal/sandbox"
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
	state, err := os.MkdirTemp("", "rmact-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(state)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sb, err := sandbox.Connect(ctx, sandbox.Options{Address: os.Getenv("RUNMILL_CONTAINERD_ADDRESS"), StateDir: state})
	if err != nil {
		if os.Getenv("CI") == "true" {
			fmt.Fprintf(os.Stderr, "FAIL: CI=true and no containerd for the action tests: %v\n", err)
			return 1
		}
		noSandbox = fmt.Sprintf("no containerd (set RUNMILL_CONTAINERD_ADDRESS, or run as root with containerd and runc installed): %v", err)
	} else {
		containerdAddress = sb.Address()
		defer sb.Close()
	}
	return m.Run()
}
