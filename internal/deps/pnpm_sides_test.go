package deps_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/deps"
	"github.com/runmill/verify/internal/deps/depstest"
	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/internal/gittest"
)

// pnpmRepo is the pnpm sample with is-number 7.0.0 and ms 2.1.2 (the base)
// and a candidate that bumps ms to 2.1.3.
func pnpmRepo(t testing.TB) (r *gittest.Repo, repo *git.Repo, base, cand string) {
	t.Helper()
	depstest.Need(t, "git")
	r = gittest.New(t)
	r.Write(".gitignore", "node_modules/\n")
	depstest.WritePnpm(t, r.Dir, "pnpm-basic")
	base = r.Commit("base")
	depstest.WritePnpm(t, r.Dir, "pnpm-bump")
	cand = r.Commit("bump ms to 2.1.3")
	repo, err := git.Open(context.Background(), r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return r, repo, base, cand
}

func pnpmImport(t *testing.T, repo *git.Repo, state, commit, from string) (deps.Imported, error) {
	t.Helper()
	return deps.Import(context.Background(), repo, deps.ImportOptions{Strategy: deps.Pnpm, Commit: commit, From: from, StateDir: state})
}

// Both sides installed by pnpm from the npm registry and imported: each
// checkout sees node_modules with its own ms, and the candidate's import
// copies only what the base's did not store (ms 2.1.3).
func TestPnpmBothSides(t *testing.T) {
	r, repo, base, cand := pnpmRepo(t)
	state := t.TempDir()
	b, err := pnpmImport(t, repo, state, base, depstest.PnpmPrepare(t, r, base))
	if err != nil {
		t.Fatal(err)
	}
	c, err := pnpmImport(t, repo, state, cand, depstest.PnpmPrepare(t, r, cand))
	if err != nil {
		t.Fatal(err)
	}
	if c.Copy.LinkedBytes == 0 || c.Copy.CopiedBytes == 0 || c.Copy.CopiedBytes >= c.Receipt.Bytes {
		t.Fatalf("candidate copied %d and linked %d of %d bytes", c.Copy.CopiedBytes, c.Copy.LinkedBytes, c.Receipt.Bytes)
	}
	t.Logf("base: copied %d bytes; candidate: copied %d, linked %d of %d", b.Copy.CopiedBytes, c.Copy.CopiedBytes, c.Copy.LinkedBytes, c.Receipt.Bytes)

	ctx := context.Background()
	p, err := deps.Prepare(ctx, repo, deps.Options{SourceDir: r.Dir, StateDir: state, Base: base, Candidate: cand}, []string{deps.Pnpm})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, side := range []struct{ commit, key, ms string }{{base, b.Receipt.Key, "2.1.2"}, {cand, c.Receipt.Key, "2.1.3"}} {
		co := checkout(t, r, side.commit)
		v, err := p.Attach(ctx, deps.Pnpm, co)
		if err != nil {
			t.Fatal(err)
		}
		if v.Use == nil || v.Use.Key != side.key || v.Use.PreparedFor != side.commit || len(v.Mounts) != 1 || v.Mounts[0].Destination != filepath.Join(co, "node_modules") {
			t.Fatalf("view %+v", v)
		}
		pkg, err := os.ReadFile(filepath.Join(v.Mounts[0].Source, "ms", "package.json"))
		if err != nil || !strings.Contains(string(pkg), `"version": "`+side.ms+`"`) {
			t.Fatalf("%s sees ms %s: %v", side.commit, pkg, err)
		}
		if err := v.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// A bump with only the base imported: the candidate is refused, named,
// with the command that prepares it; the base still runs.
func TestPnpmCandidateUnprepared(t *testing.T) {
	r, repo, base, cand := pnpmRepo(t)
	state := t.TempDir()
	if _, err := pnpmImport(t, repo, state, base, depstest.PnpmPrepare(t, r, base)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p, err := deps.Prepare(ctx, repo, deps.Options{SourceDir: r.Dir, StateDir: state, Base: base, Candidate: cand}, []string{deps.Pnpm})
	wantRefusal(t, err, "the candidate "+cand+": pnpm-lock.yaml changed in the candidate")
	defer p.Close()
	_, err = p.Attach(ctx, deps.Pnpm, checkout(t, r, cand))
	wantRefusal(t, err, "runmill deps import --strategy pnpm --repo "+r.Dir+" --commit "+cand)
	v, err := p.Attach(ctx, deps.Pnpm, checkout(t, r, base))
	if err != nil {
		t.Fatal(err)
	}
	v.Close()
}

// An installed file edited before the import is refused by its store
// hash; an install made for another commit is refused by its manifests.
func TestPnpmImportRefuses(t *testing.T) {
	r, repo, base, cand := pnpmRepo(t)
	state := t.TempDir()
	from := depstest.PnpmPrepare(t, r, base)
	_, err := pnpmImport(t, repo, state, cand, from)
	wantRefusal(t, err, "is not "+cand[:12]+"'s")
	f := filepath.Join(from, "node_modules", "ms", "index.js")
	os.Remove(f) // a hard link into pnpm's store: edit a copy
	if err := os.WriteFile(f, []byte("module.exports = () => 42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = pnpmImport(t, repo, state, base, from)
	wantRefusal(t, err, "index.js was edited")
}

// The operator's pnpm install in the source checkout at the base serves
// the base without an import, and doctor's CheckSource accepts it; once
// the checkout holds another commit's manifests both refuse.
func TestPnpmSourceCheckout(t *testing.T) {
	r, _, base, _ := pnpmRepo(t)
	src := depstest.Worktree(t, r, base)
	depstest.PnpmInstall(t, src)
	ctx := context.Background()
	repo, err := git.Open(ctx, src) // as doctor opens the source checkout
	if err != nil {
		t.Fatal(err)
	}
	o := deps.Options{SourceDir: src, StateDir: t.TempDir(), Base: base, Candidate: base}
	if err := deps.CheckSource(ctx, repo, o, []string{deps.Pnpm}); err != nil {
		t.Fatal(err)
	}
	p, err := deps.Prepare(ctx, repo, o, []string{deps.Pnpm})
	if err != nil {
		t.Fatal(err)
	}
	v, err := p.Attach(ctx, deps.Pnpm, checkout(t, r, base))
	if err != nil || v.Use == nil || v.Use.PreparedFor != base {
		t.Fatalf("view %+v: %v", v, err)
	}
	v.Close()
	p.Close()
	depstest.WritePnpm(t, src, "pnpm-bump")
	wantRefusal(t, deps.CheckSource(ctx, repo, o, []string{deps.Pnpm}), "package.json in "+src+" is not")
	o.StateDir = t.TempDir()
	p, err = deps.Prepare(ctx, repo, o, []string{deps.Pnpm})
	wantRefusal(t, err, "the candidate and base "+base)
	p.Close()
}

// BenchmarkPnpmImportSecondSide imports the candidate (ms 2.1.2 -> 2.1.3)
// into a cache holding the base: only ms 2.1.3's new bytes are copied.
func BenchmarkPnpmImportSecondSide(b *testing.B) {
	r, repo, base, cand := pnpmRepo(b)
	baseFrom, candFrom := depstest.PnpmPrepare(b, r, base), depstest.PnpmPrepare(b, r, cand)
	imp := func(state, commit, from string) deps.Imported {
		i, err := deps.Import(context.Background(), repo, deps.ImportOptions{Strategy: deps.Pnpm, Commit: commit, From: from, StateDir: state})
		if err != nil {
			b.Fatal(err)
		}
		return i
	}
	var copied, linked, total int64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		state := b.TempDir()
		imp(state, base, baseFrom)
		b.StartTimer()
		c := imp(state, cand, candFrom)
		total += c.Receipt.Bytes
		copied += c.Copy.CopiedBytes
		linked += c.Copy.LinkedBytes
	}
	b.ReportMetric(float64(total)/float64(b.N), "tree-B/op")
	b.ReportMetric(float64(copied)/float64(b.N), "copied-B/op")
	b.ReportMetric(float64(linked)/float64(b.N), "linked-B/op")
}
