package deps_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/runmill/verify/internal/deps"
	"github.com/runmill/verify/internal/deps/depstest"
	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/internal/gittest"
)

// bothSides is a repository whose candidate bumps semver 7.5.3 → 7.5.4
// (mocha 10.8.2 beside it, unchanged), each side installed with npm ci
// --ignore-scripts from the npm registry in its own worktree, as the
// operator (or the Action's prepare step) does.
func bothSides(t testing.TB) (repo *git.Repo, base, cand, baseDir, candDir string) {
	t.Helper()
	depstest.Need(t, "node", "npm", "git")
	r := gittest.New(t)
	depstest.WriteSemver(t, r, "7.5.3")
	r.Write(".gitignore", "node_modules/\n")
	base = r.Commit("base")
	depstest.WriteSemver(t, r, "7.5.4")
	cand = r.Commit("bump semver")
	baseDir, candDir = depstest.Worktree(t, r, base), depstest.Worktree(t, r, cand)
	for _, d := range []string{baseDir, candDir} {
		depstest.Run(t, d, nil, "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund")
	}
	repo, err := git.Open(context.Background(), r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return repo, base, cand, baseDir, candDir
}

// Preparing both sides does not copy a package twice when the versions are
// equal (issue 15): the candidate's import links every file the base's
// already stored and copies only semver's.
func TestImportBothSidesSharesPackages(t *testing.T) {
	repo, base, cand, baseDir, candDir := bothSides(t)
	state := t.TempDir()
	ctx := context.Background()
	b, err := deps.Import(ctx, repo, deps.ImportOptions{Strategy: deps.NPM, Commit: base, From: baseDir, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	if b.Copy.LinkedBytes != 0 && b.Copy.CopiedBytes == 0 {
		t.Fatalf("the first import copied nothing: %+v", b.Copy)
	}
	c, err := deps.Import(ctx, repo, deps.ImportOptions{Strategy: deps.NPM, Commit: cand, From: candDir, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	if c.Receipt.Key == b.Receipt.Key {
		t.Fatal("both sides share one key")
	}
	if c.Copy.CopiedBytes+c.Copy.LinkedBytes != c.Receipt.Bytes {
		t.Errorf("copied %d + linked %d != the tree's %d bytes", c.Copy.CopiedBytes, c.Copy.LinkedBytes, c.Receipt.Bytes)
	}
	// Only semver differs between the two trees (its package files and
	// the hidden lockfile); mocha's whole tree is linked.
	if c.Copy.CopiedBytes*10 > c.Receipt.Bytes {
		t.Errorf("the candidate's import copied %d of %d bytes", c.Copy.CopiedBytes, c.Receipt.Bytes)
	}
	t.Logf("base: copied %d bytes; candidate: copied %d, linked %d of %d", b.Copy.CopiedBytes, c.Copy.CopiedBytes, c.Copy.LinkedBytes, c.Receipt.Bytes)

	// Both sides prepared: a run's Prepare finds each by its commit, and
	// each checkout gets the install of its own lockfile.
	p, err := deps.Prepare(ctx, repo, deps.Options{SourceDir: filepath.Join(t.TempDir(), "none"), StateDir: state, Base: base, Candidate: cand}, []string{deps.NPM})
	if err != nil {
		t.Fatal(err)
	}
	for _, side := range []struct{ commit, dir, key string }{{base, baseDir, b.Receipt.Key}, {cand, candDir, c.Receipt.Key}} {
		v, err := p.Attach(ctx, deps.NPM, checkoutOf(t, repo, side.commit))
		if err != nil {
			t.Fatal(err)
		}
		if v.Use == nil || v.Use.Key != side.key || v.Use.PreparedFor != side.commit {
			t.Errorf("%s got %+v, want key %s", side.commit, v.Use, side.key)
		}
		v.Close()
	}
}

func checkoutOf(t testing.TB, repo *git.Repo, commit string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "co")
	depstest.Run(t, repo.Dir, nil, "git", "worktree", "add", "-q", "--detach", dir, commit)
	return dir
}

// BenchmarkImportBothSides: both sides' imports into an empty cache; and
// BenchmarkImportSecondSide: the candidate's import alone, into a cache
// that holds the base's (docs/benchmarks.md § Prepared dependencies for
// both sides).
func BenchmarkImportBothSides(b *testing.B)  { benchImport(b, false) }
func BenchmarkImportSecondSide(b *testing.B) { benchImport(b, true) }

func benchImport(b *testing.B, secondOnly bool) {
	repo, base, cand, baseDir, candDir := bothSides(b)
	ctx := context.Background()
	imp := func(state, commit, dir string) deps.Imported {
		r, err := deps.Import(ctx, repo, deps.ImportOptions{Strategy: deps.NPM, Commit: commit, From: dir, StateDir: state})
		if err != nil {
			b.Fatal(err)
		}
		return r
	}
	var copied, linked, total int64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		state := b.TempDir()
		if secondOnly {
			imp(state, base, baseDir)
		}
		b.StartTimer()
		sides := []struct{ commit, dir string }{{base, baseDir}, {cand, candDir}}
		if secondOnly {
			sides = sides[1:]
		}
		for _, s := range sides {
			r := imp(state, s.commit, s.dir)
			total += r.Receipt.Bytes
			copied += r.Copy.CopiedBytes
			linked += r.Copy.LinkedBytes
		}
	}
	// tree-B: what full copies would write; copied-B: what the object
	// store wrote; linked-B: what it found there already.
	b.ReportMetric(float64(total)/float64(b.N), "tree-B/op")
	b.ReportMetric(float64(copied)/float64(b.N), "copied-B/op")
	b.ReportMetric(float64(linked)/float64(b.N), "linked-B/op")
}
