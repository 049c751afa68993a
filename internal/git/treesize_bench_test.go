package git

import (
	"context"
	"os"
	"testing"
)

// BenchmarkTreeSize measures TreeSize on RUNMILL_BENCH_REPO at HEAD.
func BenchmarkTreeSize(b *testing.B) {
	dir := os.Getenv("RUNMILL_BENCH_REPO")
	if dir == "" {
		b.Skip("RUNMILL_BENCH_REPO names a repository to measure")
	}
	r := &Repo{Dir: dir}
	for b.Loop() {
		s, err := r.TreeSize(context.Background(), "HEAD")
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(s.Entries), "entries")
	}
}
