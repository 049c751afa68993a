package checkout_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runmill/verify/pkg/harness"
	"github.com/runmill/verify/pkg/treehash"
)

// BenchmarkPinnedCheckout measures what issue 19 adds to a check run's
// checkout: laying 3 of the base's harness files over it (a script, two
// configs), in full and layered mode, against the same checkout without
// pins. docs/benchmarks.md § Harness pinning has the figures.
func BenchmarkPinnedCheckout(b *testing.B) {
	size := benchSizes[0]
	r := benchRepoFor(b, size.files, size.bytes)
	paths := strings.Fields(git(b, r.dir, "ls-tree", "-r", "--name-only", r.commit))[:3]
	var pins []harness.Pin
	for _, p := range paths {
		pins = append(pins, harness.Pin{Path: p, Entry: harness.Entry{Mode: "100644", Blob: strings.TrimSpace(git(b, r.dir, "rev-parse", r.commit+":"+p))}})
	}
	for _, layered := range []bool{false, true} {
		for _, n := range []int{0, len(pins)} {
			b.Run(fmt.Sprintf("files=%d/layered=%v/pins=%d", size.files, layered, n), func(b *testing.B) {
				m := benchManagerIn(b, r, filepath.Join(benchRoot, "state"))
				if layered {
					if err := m.EnableLayers(); err != nil {
						b.Skipf("layered checkouts unavailable: %v", err)
					}
				}
				ctx := context.Background()
				cpu := newCPUMeter(b)
				for b.Loop() {
					c, err := m.CreatePinned(ctx, r.commit, pins[:n])
					if err != nil {
						b.Fatal(err)
					}
					if _, _, err := treehash.Sum(ctx, c.Dir, treehash.Options{}); err != nil {
						b.Fatal(err)
					}
					if err := c.Remove(); err != nil {
						b.Fatal(err)
					}
					if err := m.Wait(ctx); err != nil {
						b.Fatal(err)
					}
				}
				cpu.report()
			})
		}
	}
}
