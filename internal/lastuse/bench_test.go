package lastuse_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/runmill/verify/internal/lastuse"
)

// BenchmarkPruneNothingDue is what every verify's start pays when nothing
// is due: listing the roots and measuring every entry (one lstat per
// file) for the size bound — here 4 entries of 25 000 files each (100
// directories of 250), about a large node_modules each (docs/benchmarks.md
// § Pruning).
func BenchmarkPruneNothingDue(b *testing.B) {
	root := filepath.Join(b.TempDir(), "cache")
	for e := range 4 {
		for d := range 100 {
			dir := filepath.Join(root, fmt.Sprintf("entry%d", e), "tree", fmt.Sprintf("d%03d", d))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				b.Fatal(err)
			}
			for f := range 250 {
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d", f)), []byte("x"), 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	roots := []lastuse.Root{{Dir: root}}
	limits := lastuse.Limits{UnusedFor: 14 * 24 * time.Hour, MaxBytes: 10 << 30, MinAge: time.Hour}
	for b.Loop() {
		removed, usage, err := lastuse.Prune(context.Background(), roots, limits, time.Now())
		if err != nil || len(removed) != 0 || usage.Entries != 4 {
			b.Fatalf("%v %v %+v", removed, err, usage)
		}
	}
}
