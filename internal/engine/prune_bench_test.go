package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/runmill/verify/internal/engine"
)

// makeRuns makes n run directories of the hour before pruneNow under
// state/runs, each a statement and one artifact, as a small run leaves.
func makeRuns(b *testing.B, state string, from, n int) {
	b.Helper()
	for i := from; i < from+n; i++ {
		dir := filepath.Join(state, "runs", runID(time.Duration(i)*time.Second, i))
		if err := os.MkdirAll(filepath.Join(dir, "artifacts", "sha256"), 0o755); err != nil {
			b.Fatal(err)
		}
		for _, f := range []string{"statement.json", "artifacts/sha256/0a"} {
			if err := os.WriteFile(filepath.Join(dir, f), make([]byte, 512), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkPruneRuns is what every verify's start pays for the runs'
// prune (docs/benchmarks.md § Pruning): over 200 runs of the last hour
// with nothing due, and with 40 due by count (50 runs, --keep-runs 10).
func BenchmarkPruneRuns(b *testing.B) {
	b.Run("200 runs, nothing due", func(b *testing.B) {
		state := b.TempDir()
		makeRuns(b, state, 0, 200)
		for b.Loop() {
			hold, pruned, err := engine.PruneRuns(context.Background(), state, "", pruneNow, engine.DefaultRetention)
			if err != nil || len(pruned) != 0 || hold != nil {
				b.Fatal(pruned, err)
			}
		}
	})
	b.Run("50 runs, 40 due by count", func(b *testing.B) {
		state := b.TempDir()
		makeRuns(b, state, 0, 10)
		r := engine.Retention{MaxRuns: 10, MaxAge: 14 * 24 * time.Hour}
		for b.Loop() {
			b.StopTimer()
			makeRuns(b, state, 10, 40)
			b.StartTimer()
			_, pruned, err := engine.PruneRuns(context.Background(), state, "", pruneNow, r)
			if err != nil || len(pruned) != 40 {
				b.Fatal(len(pruned), err)
			}
		}
	})
}
