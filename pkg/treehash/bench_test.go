package treehash_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runmill/verify/pkg/treehash"
)

// BenchmarkSum hashes a 2 000-file, ~12 MB tree of source-like text. The
// side-by-side comparison with `tar -cf - . | sha256sum` on the issue's
// 1 000- and 20 000-file repositories lives in internal/checkout
// (BenchmarkBaselines); docs/benchmarks.md has the figures.
func BenchmarkSum(b *testing.B) {
	root := b.TempDir()
	line := "\tif err := w.Write(ctx, value); err != nil { return fmt.Errorf(\"write: %w\", err) }\n"
	var bytes int64
	for i := range 2000 {
		p := filepath.Join(root, fmt.Sprintf("pkg%02d/sub%d/f%04d.go", i%20, i%7, i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		content := strings.Repeat(line, 1+(i*37)%150)
		bytes += int64(len(content))
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(bytes)
	for b.Loop() {
		if _, _, err := treehash.Sum(context.Background(), root, treehash.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
