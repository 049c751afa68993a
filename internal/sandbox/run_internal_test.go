package sandbox

import (
	"context"
	"os"
	"testing"

	"github.com/runmill/verify/internal/testreq"
	"time"
)

// TestRunOutlivesCleanupTimeout: the cleanup deadline bounds cleanup only;
// a run longer than it is not cut short.
func TestRunOutlivesCleanupTimeout(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for a private containerd")
	}
	dir, err := os.MkdirTemp("", "rmsb-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	s, err := Connect(context.Background(), Options{Address: os.Getenv("RUNMILL_CONTAINERD_ADDRESS"), StateDir: dir})
	testreq.Need(t, err == nil, "no containerd: %v", err)
	defer s.Close()
	defer func(d time.Duration) { cleanupTimeout = d }(cleanupTimeout)
	cleanupTimeout = time.Second
	res, err := s.Run(context.Background(), Spec{Command: "sleep 2; echo done"})
	if err != nil || res.ExitCode != 0 || string(res.Stdout.Kept) != "done\n" {
		t.Fatalf("%v %+v", err, res)
	}
}
