package sandboxtest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/runmill/verify/internal/sandbox"
	"github.com/runmill/verify/internal/testreq"
)

// Start gives a package's integration tests their containerd, from TestMain:
// RUNMILL_CONTAINERD_ADDRESS, else the system socket, else a private daemon
// started under a temporary directory (as root, with containerd and runc
// installed). Without one, missing says why, for the tests to skip with — and
// with CI=true that is an error instead, so CI cannot silently stop running
// the sandbox tests. stop closes the sandbox and removes the directory.
func Start(what string) (sb *sandbox.Sandbox, missing string, stop func(), err error) {
	// A short path: a private daemon's socket lives under it, and unix
	// socket paths are limited to 107 bytes.
	state, err := os.MkdirTemp("", "rmsb-")
	if err != nil {
		return nil, "", nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sb, cerr := sandbox.Connect(ctx, sandbox.Options{Address: os.Getenv("RUNMILL_CONTAINERD_ADDRESS"), StateDir: state})
	if cerr != nil {
		os.RemoveAll(state)
		if testreq.CI() {
			return nil, "", nil, fmt.Errorf("FAIL: CI=true and no containerd for %s: %v", what, cerr)
		}
		missing = fmt.Sprintf("no containerd for %s (set RUNMILL_CONTAINERD_ADDRESS, or run as root with containerd and runc installed): %v", what, cerr)
		return nil, missing, func() {}, nil
	}
	return sb, "", func() { sb.Close(); os.RemoveAll(state) }, nil
}

// Main is a TestMain body: it runs m's tests with their containerd (Start),
// setting *address to its socket, or *missing to why there is none.
func Main(m *testing.M, what string, address, missing *string) int {
	sb, why, stop, err := Start(what)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	if *missing = why; sb != nil {
		*address = sb.Address()
	}
	return m.Run()
}
