package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/gittest"
)

// BenchmarkDiscover500Checks10kPaths: the issue's figure for `runmill
// manifest` — 500 checks, most path-gated, and a change touching 10 000 paths,
// none of which triggers a gated check (the worst case: every rule is tried
// against every path).
func BenchmarkDiscover500Checks10kPaths(b *testing.B) { benchDiscover(b, false) }

// BenchmarkDiscover500Checks10kPathsSymlinks is the same with 101 symlinks
// at the base into the changed directories — lib/NNN → ../src/dNN for the
// 100 directories and vendor → src — so the rules are also walked through
// links (docs/policy.md § Path rules see through symlinks): the 80 checks
// gated on lib/NNN/*.go for NNN < 100 are required through theirs.
func BenchmarkDiscover500Checks10kPathsSymlinks(b *testing.B) { benchDiscover(b, true) }

func benchDiscover(b *testing.B, links bool) {
	r := gittest.New(b)
	var pol strings.Builder
	pol.WriteString("checks:\n")
	for i := 0; i < 500; i++ {
		fmt.Fprintf(&pol, "  - id: check-%03d\n    run: make check-%03d\n", i, i)
		if i%5 != 0 {
			fmt.Fprintf(&pol, "    paths: [\"svc%03d/**\", \"**/*.k%03d\", \"lib/%03d/*.go\"]\n", i, i, i)
		}
	}
	r.Write(".runmill/checks.yaml", pol.String())
	wantChecks := 100
	if links {
		for d := 0; d < 100; d++ {
			r.Write(fmt.Sprintf("src/d%02d/doc.go", d), "package d\n")
			r.Symlink(fmt.Sprintf("../src/d%02d", d), fmt.Sprintf("lib/%03d", d))
		}
		r.Symlink("src", "vendor")
		wantChecks += 80
	}
	base := r.Commit("base")
	r.Checkout("pr", true)
	for i := 0; i < 10000; i++ {
		p := filepath.Join(r.Dir, "src", fmt.Sprintf("d%02d", i%100), fmt.Sprintf("f%05d.go", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(fmt.Sprintf("package d\n// %d\n", i)), 0o644)
	}
	cand := r.Commit("10k files")
	o := engine.DiscoverOptions{RepoDir: r.Dir, Base: base, Candidate: cand}
	m, err := engine.Discover(context.Background(), o)
	if err != nil {
		b.Fatal(err)
	}
	if m.ChangedPaths != 10000 || len(m.Checks) != wantChecks || len(m.NotTriggered) != 500-wantChecks {
		b.Fatalf("unexpected manifest: %d paths, %d checks, %d not triggered", m.ChangedPaths, len(m.Checks), len(m.NotTriggered))
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := engine.Discover(context.Background(), o); err != nil {
			b.Fatal(err)
		}
	}
}
