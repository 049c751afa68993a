package deps_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/testreq"

	"github.com/runmill/verify/internal/deps"
	"github.com/runmill/verify/internal/deps/depstest"
	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/internal/mountinfo"
	"github.com/runmill/verify/pkg/rmerr"
)

// npmRepo is a committed npm sample with npm ci run in its work tree.
func npmRepo(t *testing.T) (*gittest.Repo, string) {
	t.Helper()
	depstest.Need(t, "node", "npm", "git")
	r := gittest.New(t)
	depstest.WriteNPM(t, r)
	base := r.Commit("base")
	depstest.NPMCI(t, r.Dir)
	return r, base
}

func prepare(t *testing.T, r *gittest.Repo, state, base, cand string, strategy string, g deps.GoOptions) (*deps.Prepared, error) {
	t.Helper()
	repo, err := git.Open(context.Background(), r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return deps.Prepare(context.Background(), repo, deps.Options{SourceDir: r.Dir, StateDir: state, Base: base, Candidate: cand, Go: g}, []string{strategy})
}

// checkout is a detached work tree of commit (git worktree), like the
// engine's fresh checkouts.
func checkout(t *testing.T, r *gittest.Repo, commit string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "co")
	r.Git("worktree", "add", "-q", "--detach", dir, commit)
	return dir
}

func wantRefusal(t *testing.T, err error, contains string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want RM-VERIFY-005 mentioning %q", contains)
	}
	if rmerr.CodeOf(err) != rmerr.VerifyDependencies || !strings.Contains(err.Error(), contains) {
		t.Fatalf("got %v; want RM-VERIFY-005 mentioning %q", err, contains)
	}
}

func TestNPMImportReuseAndView(t *testing.T) {
	r, base := npmRepo(t)
	state := t.TempDir()
	p, err := prepare(t, r, state, base, base, deps.NPM, deps.GoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rc := p.Receipts()
	if len(rc) != 1 || rc[0].Reused || rc[0].Files < 100 || !strings.HasPrefix(rc[0].Fingerprint, "sha256:") {
		t.Fatalf("first prepare: %+v", rc)
	}
	p2, err := prepare(t, r, state, base, base, deps.NPM, deps.GoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rc2 := p2.Receipts(); !rc2[0].Reused || rc2[0].Key != rc[0].Key || rc2[0].Fingerprint != rc[0].Fingerprint {
		t.Fatalf("second prepare did not reuse the entry: %+v", rc2)
	}

	co := checkout(t, r, base)
	v, err := p2.Attach(context.Background(), deps.NPM, co)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Mounts) != 1 || v.Mounts[0].Destination != filepath.Join(co, "node_modules") || len(v.Exclude) != 1 || v.Exclude[0] != "node_modules" {
		t.Fatalf("view: %+v", v)
	}
	// The mount point is an empty directory in the checkout; the view
	// itself lies outside it, beside the cache.
	if list, err := os.ReadDir(filepath.Join(co, "node_modules")); err != nil || len(list) != 0 {
		t.Fatalf("mount point: %v %v", list, err)
	}
	view := v.Mounts[0].Source
	if strings.HasPrefix(view, co+"/") || !strings.HasPrefix(view, filepath.Join(state, "deps")+"/") {
		t.Fatalf("the view %s is not beside the cache", view)
	}
	// The view's files are the cache's inodes (hard links), not copies.
	cached := filepath.Join(state, "deps", "npm", strings.TrimPrefix(rc[0].Key, "sha256:"), "tree", "mocha", "package.json")
	a, err := os.Stat(cached)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.Stat(filepath.Join(view, "mocha", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(a, b) {
		t.Fatal("the view's file is not a hard link to the cached one")
	}
	if a.Mode().Perm()&0o222 != 0 {
		t.Fatalf("cached file is writable: %v", a.Mode())
	}
	if _, err := os.Lstat(filepath.Join(view, ".bin", "mocha")); err != nil {
		t.Fatalf("the view lost the .bin symlink: %v", err)
	}
	// Close removes the view, not the cache.
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(view); !os.IsNotExist(err) {
		t.Errorf("the view survived Close: %v", err)
	}
	if _, err := os.Stat(cached); err != nil {
		t.Errorf("Close took the cache with it: %v", err)
	}
}

// Each refusal of the spec, produced by really changing the thing.
func TestNPMRefusals(t *testing.T) {
	t.Run("missing install", func(t *testing.T) {
		depstest.Need(t, "node", "git")
		r := gittest.New(t)
		depstest.WriteNPM(t, r)
		base := r.Commit("base")
		_, err := prepare(t, r, t.TempDir(), base, base, deps.NPM, deps.GoOptions{})
		wantRefusal(t, err, "no install")
	})
	t.Run("stale local lockfile", func(t *testing.T) {
		r, _ := npmRepo(t)
		// The base moves on (a dependency bump) while the source checkout keeps its install.
		lock, _ := os.ReadFile(filepath.Join(r.Dir, "package-lock.json"))
		r.Git("checkout", "-q", "-b", "next")
		r.Write("package-lock.json", strings.Replace(string(lock), `"version": "1.0.0"`, `"version": "1.0.1"`, 1))
		newBase := r.Commit("bump")
		r.Git("checkout", "-q", "main")
		_, err := prepare(t, r, t.TempDir(), newBase, newBase, deps.NPM, deps.GoOptions{})
		wantRefusal(t, err, "package-lock.json in the source checkout")
	})
	t.Run("installed inventory differs", func(t *testing.T) {
		r, base := npmRepo(t)
		// A hand-edited install: a package's installed version changes.
		p := filepath.Join(r.Dir, "node_modules", "he", "package.json")
		b, _ := os.ReadFile(p)
		os.WriteFile(p, []byte(strings.Replace(string(b), `"version": "1.2.0"`, `"version": "9.9.9"`, 1)), 0o644)
		_, err := prepare(t, r, t.TempDir(), base, base, deps.NPM, deps.GoOptions{})
		wantRefusal(t, err, "node_modules/he/package.json says 9.9.9")
	})
	t.Run("workspace link", func(t *testing.T) {
		r, _ := npmRepo(t)
		// A real npm workspace: npm install writes the link into the lockfile.
		pkg, _ := os.ReadFile(filepath.Join(r.Dir, "package.json"))
		r.Write("package.json", strings.Replace(string(pkg), `"private":true,`, `"private":true,"workspaces":["packages/*"],`, 1))
		r.Write("packages/util/package.json", `{"name":"util","version":"1.0.0"}`)
		depstest.Run(t, r.Dir, nil, "npm", "install", "--no-audit", "--no-fund")
		base := r.Commit("workspaces")
		_, err := prepare(t, r, t.TempDir(), base, base, deps.NPM, deps.GoOptions{})
		wantRefusal(t, err, "workspace")
	})
	t.Run("candidate lockfile changed", func(t *testing.T) {
		r, base := npmRepo(t)
		p, err := prepare(t, r, t.TempDir(), base, base, deps.NPM, deps.GoOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r.Git("checkout", "-q", "-b", "cand")
		lock, _ := os.ReadFile(filepath.Join(r.Dir, "package-lock.json"))
		r.Write("package-lock.json", strings.Replace(string(lock), `"version": "1.0.0"`, `"version": "1.0.2"`, 1))
		cand := r.Commit("edit the lockfile")
		_, err = p.Attach(context.Background(), deps.NPM, checkout(t, r, cand))
		wantRefusal(t, err, "package-lock.json differs from the base's and no install was prepared for it")
		wantRefusal(t, err, "runmill deps import --repo "+r.Dir+" --commit "+cand)
	})
	t.Run("unignored node_modules", func(t *testing.T) {
		r, base := npmRepo(t)
		p, err := prepare(t, r, t.TempDir(), base, base, deps.NPM, deps.GoOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r.Git("checkout", "-q", "-b", "cand")
		r.Write(".gitignore", "reports/\n")
		r.Git("add", ".gitignore")
		r.Git("commit", "-q", "-m", "un-ignore node_modules")
		_, err = p.Attach(context.Background(), deps.NPM, checkout(t, r, r.Git("rev-parse", "HEAD")))
		wantRefusal(t, err, "node_modules/ is not ignored")
		// Committing the install as well: the commit tracks node_modules.
		cand := r.Commit("commit node_modules")
		_, err = p.Attach(context.Background(), deps.NPM, checkout(t, r, cand))
		wantRefusal(t, err, "the commit tracks node_modules")
	})
	t.Run("mutated cache", func(t *testing.T) {
		r, base := npmRepo(t)
		state := t.TempDir()
		p, err := prepare(t, r, state, base, base, deps.NPM, deps.GoOptions{})
		if err != nil {
			t.Fatal(err)
		}
		key := strings.TrimPrefix(p.Receipts()[0].Key, "sha256:")
		victim := filepath.Join(state, "deps", "npm", key, "tree", "mocha", "lib", "cli", "cli.js")
		if err := os.Remove(victim); err != nil {
			t.Fatal(err)
		}
		_, err = prepare(t, r, state, base, base, deps.NPM, deps.GoOptions{})
		wantRefusal(t, err, "was mutated")
		// The mutated entry is gone; the next run imports afresh.
		p3, err := prepare(t, r, state, base, base, deps.NPM, deps.GoOptions{})
		if err != nil || p3.Receipts()[0].Reused {
			t.Fatalf("after removal: %v %+v", err, p3.Receipts())
		}
	})
	t.Run("lockfile version 1", func(t *testing.T) {
		// The install is real; the committed lockfile is the npm 6 form
		// of the same dependencies (lockfileVersion 1: a nested
		// "dependencies" map, no "packages"). Another npm ci cannot help,
		// so the fix must not say it — at the base or the candidate.
		r, _ := npmRepo(t)
		r.Write("package-lock.json", lockfileV1(t, r.Dir))
		base := r.Commit("an npm 6 lockfile")
		_, err := prepare(t, r, t.TempDir(), base, base, deps.NPM, deps.GoOptions{})
		want := "RM-VERIFY-005: npm: package-lock.json at " + base[:12] + ": lockfileVersion 1 has no packages map: it was written by npm 6 or older" +
			" (fix: regenerate package-lock.json with npm 7 or later (npm install --package-lock-only --lockfile-version 3), commit it, and start a fresh run;" +
			" running npm ci again cannot help, it keeps the lockfile as it is)"
		if err == nil || err.Error() != want {
			t.Fatalf("got %v\nwant %s", err, want)
		}
		r2, base2 := npmRepo(t)
		p, err := prepare(t, r2, t.TempDir(), base2, base2, deps.NPM, deps.GoOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r2.Git("checkout", "-q", "-b", "cand")
		r2.Write("package-lock.json", lockfileV1(t, r2.Dir))
		cand := r2.Commit("an npm 6 lockfile")
		_, err = p.Attach(context.Background(), deps.NPM, checkout(t, r2, cand))
		wantRefusal(t, err, "package-lock.json at "+cand[:12]+": lockfileVersion 1")
		if msg := err.Error(); !strings.Contains(msg, "(fix: regenerate package-lock.json") || strings.Contains(msg, "npm ci)") || strings.Contains(msg, "deps import") {
			t.Errorf("the candidate's v1 lockfile is sent to npm ci: %v", err)
		}
	})
	t.Run("other package manager", func(t *testing.T) {
		r := gittest.New(t)
		base := r.Commit("empty")
		_, err := prepare(t, r, t.TempDir(), base, base, "pip", deps.GoOptions{})
		wantRefusal(t, err, "npm, go-modules")
	})
}

// lockfileV1 rewrites dir's package-lock.json as npm 6 wrote it: the
// same packages as a "dependencies" map, lockfileVersion 1.
func lockfileV1(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v3 struct {
		Name, Version string
		Packages      map[string]map[string]any
	}
	if err := json.Unmarshal(b, &v3); err != nil {
		t.Fatal(err)
	}
	dependencies := map[string]any{}
	for k, p := range v3.Packages {
		if name, ok := strings.CutPrefix(k, "node_modules/"); ok && !strings.Contains(name, "/node_modules/") {
			dependencies[name] = map[string]any{"version": p["version"], "resolved": p["resolved"], "integrity": p["integrity"]}
		}
	}
	out, err := json.MarshalIndent(map[string]any{"name": v3.Name, "version": v3.Version, "lockfileVersion": 1, "requires": true, "dependencies": dependencies}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(out) + "\n"
}

// goRepo is a committed Go sample and a module cache downloaded for it,
// as the operator prepares one.
func goRepo(t *testing.T) (r *gittest.Repo, base, modcache string) {
	t.Helper()
	depstest.Need(t, "go", "git")
	r = gittest.New(t)
	depstest.WriteGo(t, r)
	base = r.Commit("base")
	modcache = t.TempDir()
	depstest.GoModDownload(t, r.Dir, modcache)
	return r, base, modcache
}

func TestGoModules(t *testing.T) {
	r, base, modcache := goRepo(t)
	state := t.TempDir()
	g := deps.GoOptions{ModuleCache: modcache}
	p, err := prepare(t, r, state, base, base, deps.GoModules, g)
	if err != nil {
		t.Fatal(err)
	}
	v, err := p.Attach(context.Background(), deps.GoModules, checkout(t, r, base))
	if err != nil {
		t.Fatal(err)
	}
	tree := v.ReadOnly[0]
	for _, want := range []string{"GOMODCACHE=" + tree, "GOFLAGS=-mod=readonly", "GOPROXY=off"} {
		if !strings.Contains(strings.Join(v.Env, "\n"), want) {
			t.Errorf("env %v lacks %s", v.Env, want)
		}
	}
	if _, err := os.Stat(filepath.Join(tree, "github.com", "google", "go-cmp@v0.6.0", "cmp", "compare.go")); err != nil {
		t.Fatalf("module not in the prepared cache: %v", err)
	}
	if p2, err := prepare(t, r, state, base, base, deps.GoModules, g); err != nil || !p2.Receipts()[0].Reused {
		t.Fatalf("reuse: %v", err)
	}

	t.Run("go.sum changed in the candidate", func(t *testing.T) {
		r.Git("checkout", "-q", "-b", "add")
		sum, _ := os.ReadFile(filepath.Join(r.Dir, "go.sum"))
		r.Write("go.sum", string(sum)+"golang.org/x/text v0.3.0/go.mod h1:NqM8EUOU14njkJ3fqMW+pc6Ldnwhi/IjpwHt7yyuwOQ=\n")
		cand := r.Commit("add a line")
		r.Git("checkout", "-q", "main")
		// Each side is verified against its own go.sum: the base's is
		// prepared, the candidate's lacks a module, and the refusal names
		// the candidate and the command that prepares it.
		p, err := prepare(t, r, t.TempDir(), base, cand, deps.GoModules, g)
		wantRefusal(t, err, "the candidate "+cand+" has no prepared module cache")
		wantRefusal(t, err, "golang.org/x/text@v0.3.0: go.mod is not in the module cache")
		wantRefusal(t, err, "in a checkout of "+cand+" run `GOMODCACHE="+modcache)
		if _, err := p.Attach(context.Background(), deps.GoModules, checkout(t, r, base)); err != nil {
			t.Fatalf("the base is prepared: %v", err)
		}
		_, err = p.Attach(context.Background(), deps.GoModules, checkout(t, r, cand))
		wantRefusal(t, err, "the candidate "+cand+" has no prepared module cache")
	})
	t.Run("imported for the commit", func(t *testing.T) {
		// runmill deps import --strategy go-modules: the commit's module
		// cache, verified and recorded; a later run finds it by commit
		// even though its declared module cache is empty.
		repo, err := git.Open(context.Background(), r.Dir)
		if err != nil {
			t.Fatal(err)
		}
		state := t.TempDir()
		if _, err := deps.Import(context.Background(), repo, deps.ImportOptions{Strategy: deps.GoModules, Commit: base, From: t.TempDir(), StateDir: state}); err == nil {
			t.Fatal("an empty module cache was imported")
		}
		imp, err := deps.Import(context.Background(), repo, deps.ImportOptions{Strategy: deps.GoModules, Commit: base, From: modcache, StateDir: state})
		if err != nil {
			t.Fatal(err)
		}
		p, err := prepare(t, r, state, base, base, deps.GoModules, deps.GoOptions{ModuleCache: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		v, err := p.Attach(context.Background(), deps.GoModules, checkout(t, r, base))
		if err != nil {
			t.Fatal(err)
		}
		if v.Use == nil || v.Use.Key != imp.Receipt.Key || !strings.Contains(strings.Join(v.Env, " "), "GOMODCACHE=") {
			t.Fatalf("view %+v, import %s", v.Use, imp.Receipt.Key)
		}
	})
	t.Run("module missing", func(t *testing.T) {
		_, err := prepare(t, r, t.TempDir(), base, base, deps.GoModules, deps.GoOptions{ModuleCache: t.TempDir()})
		wantRefusal(t, err, "github.com/google/go-cmp@v0.6.0 is not in the module cache")
	})
	t.Run("module tampered", func(t *testing.T) {
		f := filepath.Join(modcache, "github.com", "google", "go-cmp@v0.6.0", "cmp", "compare.go")
		b, _ := os.ReadFile(f)
		if err := os.WriteFile(f, append(b, "\n// tampered\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
		defer os.WriteFile(f, b, 0o644)
		_, err := prepare(t, r, t.TempDir(), base, base, deps.GoModules, g)
		wantRefusal(t, err, "github.com/google/go-cmp@v0.6.0 hashes to")
	})
	t.Run("mutated cache", func(t *testing.T) {
		key := strings.TrimPrefix(p.Receipts()[0].Key, "sha256:")
		f := filepath.Join(state, "deps", "go-modules", key, "tree", "github.com", "google", "go-cmp@v0.6.0", "cmp", "path.go")
		os.Chmod(f, 0o644)
		if err := os.WriteFile(f, []byte("package cmp\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := prepare(t, r, state, base, base, deps.GoModules, g)
		wantRefusal(t, err, "was mutated")
	})
}

// CheckSource is the doctor's proof: it reads, and says what is wrong.
func TestCheckSource(t *testing.T) {
	r, base := npmRepo(t)
	repo, err := git.Open(context.Background(), r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	check := func(base string, strategies ...string) error {
		state := t.TempDir()
		err := deps.CheckSource(context.Background(), repo, deps.Options{SourceDir: r.Dir, StateDir: state, Base: base}, strategies)
		if ents, _ := os.ReadDir(state); len(ents) != 0 {
			t.Errorf("CheckSource wrote into the state directory: %v", ents)
		}
		return err
	}
	if err := check(base, deps.NPM); err != nil {
		t.Fatalf("ready source refused: %v", err)
	}
	// The base moved on: the source checkout is behind it.
	r.Checkout("next", true)
	r.Write("test/more.test.js", "it('more', () => {});\n")
	next := r.Commit("next")
	r.Git("checkout", "-q", "main")
	wantRefusal(t, check(next, deps.NPM), "behind the base")
	// A local commit: ahead.
	r.Write("README", "x\n")
	r.Commit("local")
	wantRefusal(t, check(base, deps.NPM), "ahead of the base")
	// Diverged, and the install removed.
	r.Remove("node_modules")
	err = check(next, deps.NPM)
	wantRefusal(t, err, "diverged from the base")
	wantRefusal(t, err, "no install")
	wantRefusal(t, check(base, "pip"), "unknown dependency strategy")
}

// TestScratchDir: with a scratch directory (the engine's checkout session),
// the import is assembled there and renamed into the cache, and the views go
// there too: nothing of a run is left beside the cache, and what a crash
// leaves is in the directory the checkout sweep removes.
func TestScratchDir(t *testing.T) {
	r, base := npmRepo(t)
	state, scratch := t.TempDir(), filepath.Join(t.TempDir(), "session")
	repo, err := git.Open(context.Background(), r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := deps.Prepare(context.Background(), repo, deps.Options{SourceDir: r.Dir, StateDir: state, ScratchDir: scratch, Base: base, Candidate: base}, []string{deps.NPM})
	if err != nil {
		t.Fatal(err)
	}
	if rc := p.Receipts(); len(rc) != 1 || rc[0].Reused {
		t.Fatalf("receipts %+v", rc)
	}
	left, _ := filepath.Glob(filepath.Join(state, "deps", "npm", ".import-*"))
	mid, _ := filepath.Glob(filepath.Join(scratch, ".import-*"))
	if len(left)+len(mid) != 0 {
		t.Errorf("import leftovers: %q %q", left, mid)
	}
	v, err := p.Attach(context.Background(), deps.NPM, checkout(t, r, base))
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if len(v.Mounts) != 1 || !strings.HasPrefix(v.Mounts[0].Source, scratch+"/views/") || v.Mounts[0].Upper != "" {
		t.Errorf("view %+v is not a read-only view in the scratch directory %s", v.Mounts, scratch)
	}

	// Copy-on-write (the engine's setting with layered checkouts): the
	// upper layer is a tmpfs of its own in the view's directory, sticky
	// and root's; Close unmounts and removes it with the view.
	t.Run("copy-on-write", func(t *testing.T) {
		testreq.Root(t, "a copy-on-write view (a tmpfs mount)")
		p, err := deps.Prepare(context.Background(), repo, deps.Options{SourceDir: r.Dir, StateDir: state, ScratchDir: scratch, Base: base, Candidate: base, CopyOnWrite: true}, []string{deps.NPM})
		if err != nil {
			t.Fatal(err)
		}
		v, err := p.Attach(context.Background(), deps.NPM, checkout(t, r, base))
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		m := v.Mounts[0]
		made := filepath.Dir(m.Source)
		if m.Upper != filepath.Join(made, "rw", "upper") || m.Work != filepath.Join(made, "rw", "work") {
			t.Fatalf("view %+v: upper and work are not in the view's rw directory", m)
		}
		if fi, err := os.Stat(m.Upper); err != nil || fi.Mode() != os.ModeDir|os.ModeSticky|0o777 {
			t.Fatalf("upper %v %v, want drwxrwxrwt", fi.Mode(), err)
		}
		if mounts, err := mountinfo.Under(made); err != nil || !slices.Equal(mounts, []string{filepath.Join(made, "rw")}) {
			t.Fatalf("mounts under the view %v %v, want its rw tmpfs", mounts, err)
		}
		if err := os.WriteFile(filepath.Join(m.Upper, "written"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := v.Close(); err != nil {
			t.Fatal(err)
		}
		if mounts, _ := mountinfo.Under(scratch); len(mounts) != 0 {
			t.Errorf("mounts left after Close: %v", mounts)
		}
		if _, err := os.Lstat(made); !os.IsNotExist(err) {
			t.Errorf("the view survived Close: %v", err)
		}
	})
}

// TestNPMImportLinksAndModes: through Prepare, on a real npm install, a
// symlink is judged where the kernel resolves it — the issue's `b -> .`
// with `a -> b/b/…/../../etc` is refused, a benign chain of links inside
// node_modules is imported and recreated in the view — and a file or
// directory not every user may read is refused, never imported readable
// by all: the checks run as nobody, and a hard link to a root-owned 0600
// file became 0444 in the view.
func TestNPMImportLinksAndModes(t *testing.T) {
	r, base := npmRepo(t)
	nm := filepath.Join(r.Dir, "node_modules")
	link := func(target, name string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(nm, name)); err != nil {
			t.Fatal(err)
		}
	}
	// A benign chain: an alias of a package, a link through the alias,
	// and a .bin entry climbing out of .bin through both.
	link("he", "he-alias")
	link("he-alias/package.json", "he-manifest")
	link("../he-manifest", ".bin/he-chain")
	p, err := prepare(t, r, t.TempDir(), base, base, deps.NPM, deps.GoOptions{})
	if err != nil {
		t.Fatalf("a benign link chain was refused: %v", err)
	}
	v, err := p.Attach(context.Background(), deps.NPM, checkout(t, r, base))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(v.Mounts[0].Source, ".bin", "he-chain")); err != nil || !strings.Contains(string(b), `"name": "he"`) {
		t.Fatalf("the view does not resolve the chain to he's package.json: %v %.80q", err, b)
	}
	v.Close()

	// The example: lexically node_modules/etc, for the kernel
	// /etc (eight links to "." then eight "..", deeper than the temp dir).
	link(".", "b")
	link(strings.Repeat("b/", 8)+strings.Repeat("../", 8)+"etc", "a")
	_, err = prepare(t, r, t.TempDir(), base, base, deps.NPM, deps.GoOptions{})
	wantRefusal(t, err, filepath.Join(nm, "a")+` links to "b/b/`)
	wantRefusal(t, err, "climbs above "+nm)
	for _, n := range []string{"a", "b"} {
		if err := os.Remove(filepath.Join(nm, n)); err != nil {
			t.Fatal(err)
		}
	}

	// A hard link to a root-owned 0600 file (the tests run as root), then
	// a private directory: each refused by name, mode and owner.
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("token"), 0o600); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(nm, "he", "secret.txt")
	if err := os.Link(secret, planted); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	_, err = prepare(t, r, state, base, base, deps.NPM, deps.GoOptions{})
	wantRefusal(t, err, "the file "+planted+" is mode 0600 (owner uid 0, gid 0), not readable by every user")
	if ms, _ := filepath.Glob(filepath.Join(state, "deps", "objects", "*", "*")); len(ms) > 0 {
		// Whatever was stored before the refusal, the secret is not.
		for _, m := range ms {
			if b, _ := os.ReadFile(m); string(b) == "token" {
				t.Fatalf("the private file was stored in the object store as %s", m)
			}
		}
	}
	if err := os.Remove(planted); err != nil {
		t.Fatal(err)
	}
	private := filepath.Join(nm, "he", "private")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err = prepare(t, r, t.TempDir(), base, base, deps.NPM, deps.GoOptions{})
	wantRefusal(t, err, "the directory "+private+" is mode 0700")
	wantRefusal(t, err, "chmod o+rx")
}
