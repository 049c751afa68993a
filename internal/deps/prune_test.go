package deps_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runmill/verify/internal/deps"
	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/internal/lastuse"
)

// TestPruneCache: the real cache's entries (a go-modules import, recorded
// for its commit, its files in the object store; operator build caches
// copied per listing) go when their last use is older than the bound and
// stay when used recently; an entry a live run holds (an open Prepared)
// stays whatever its age; what a pruned entry leaves behind (its install
// record, objects nothing else links) goes with it, but objects only while
// no import holds the store; and a run after pruning imports afresh.
func TestPruneCache(t *testing.T) {
	r, base, modcache := goRepo(t)
	repo, err := git.Open(context.Background(), r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	limits := lastuse.Limits{UnusedFor: 14 * 24 * time.Hour}
	prune := func(t *testing.T) []string {
		t.Helper()
		removed, _, err := lastuse.Prune(context.Background(), deps.CacheRoots(state), limits, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range removed {
			out = append(out, filepath.Base(filepath.Dir(r.Path))+"/"+filepath.Base(r.Path))
		}
		return out
	}
	entryOf := func(r deps.Receipt) string {
		return filepath.Join(state, "deps", r.Strategy, strings.TrimPrefix(r.Key, "sha256:"))
	}
	old := func(t *testing.T, dirs ...string) {
		t.Helper()
		mt := time.Now().Add(-20 * 24 * time.Hour)
		for _, d := range dirs {
			if err := os.Chtimes(d, mt, mt); err != nil {
				t.Fatal(err)
			}
		}
	}
	buildCache := func(name string) string {
		dir := filepath.Join(t.TempDir(), name)
		if err := os.MkdirAll(filepath.Join(dir, "00"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "00", name+"-d"), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}

	imp, err := deps.Import(context.Background(), repo, deps.ImportOptions{Strategy: deps.GoModules, Commit: base, From: modcache, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	mods := entryOf(imp.Receipt)
	live, err := prepare(t, r, state, base, base, deps.GoModules, deps.GoOptions{ModuleCache: t.TempDir(), BuildCache: buildCache("one")})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if rs := live.Receipts(); len(rs) != 2 || rs[0].Key != imp.Receipt.Key || !rs[0].Reused {
		t.Fatalf("the live run's receipts %+v: want the imported module cache, reused, and the build cache", rs)
	}
	buildOne := entryOf(live.Receipts()[1])
	ended, err := prepare(t, r, state, base, base, deps.GoModules, deps.GoOptions{ModuleCache: t.TempDir(), BuildCache: buildCache("two")})
	if err != nil {
		t.Fatal(err)
	}
	buildTwo := entryOf(ended.Receipts()[1])
	ended.Close()
	crashed := filepath.Join(state, "deps", deps.GoModules, ".import-crashed")
	if err := os.MkdirAll(filepath.Join(crashed, "tree"), 0o755); err != nil {
		t.Fatal(err)
	}
	old(t, mods, buildOne, buildTwo, crashed)

	t.Run("held entries stay however old", func(t *testing.T) {
		got := prune(t)
		want := []string{"go-build/" + filepath.Base(buildTwo), "go-modules/.import-crashed"}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("pruned %v, want %v (the live run holds the module cache and its build cache)", got, want)
		}
		for _, d := range []string{mods, buildOne} {
			if _, err := os.Stat(filepath.Join(d, "receipt.json")); err != nil {
				t.Errorf("a held entry lost its receipt: %v", err)
			}
		}
	})
	live.Close()

	t.Run("a recent use keeps an entry", func(t *testing.T) {
		// A later run finds the module cache by its commit and records the
		// use; the build cache it does not use.
		again, err := prepare(t, r, state, base, base, deps.GoModules, deps.GoOptions{ModuleCache: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		again.Close()
		if got := prune(t); !slices.Equal(got, []string{"go-build/" + filepath.Base(buildOne)}) {
			t.Fatalf("pruned %v, want only the unused build cache", got)
		}
		if st, err := os.Stat(mods); err != nil || time.Since(st.ModTime()) > time.Hour {
			t.Fatalf("the module cache's last use was not recorded: %v %v", st, err)
		}
		tidied, err := deps.Tidy(context.Background(), state, limits.UnusedFor, time.Now())
		if err != nil || tidied.Index != 0 || tidied.Objects != 0 {
			t.Fatalf("Tidy = %+v, %v: removed what the kept entry needs", tidied, err)
		}
	})

	t.Run("an unused entry goes with its record and its objects", func(t *testing.T) {
		old(t, mods)
		if got := prune(t); !slices.Equal(got, []string{"go-modules/" + filepath.Base(mods)}) {
			t.Fatalf("pruned %v, want the module cache", got)
		}
		// An import under way holds the store: its objects wait.
		store := filepath.Join(state, "deps", "objects")
		importing, err := lastuse.Hold(store)
		if err != nil {
			t.Fatal(err)
		}
		tidied, err := deps.Tidy(context.Background(), state, limits.UnusedFor, time.Now())
		importing.Close()
		if err != nil || tidied.Index != 1 || tidied.Objects != 0 {
			t.Fatalf("Tidy while an import holds the store = %+v, %v; want the record only", tidied, err)
		}
		stored := 0
		filepath.WalkDir(store, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				stored++
			}
			return nil
		})
		// Cancelled (SIGTERM): it stops before the first object.
		done, cancel := context.WithCancel(context.Background())
		cancel()
		if tidied, err := deps.Tidy(done, state, limits.UnusedFor, time.Now()); !errors.Is(err, context.Canceled) || tidied.Objects != 0 {
			t.Fatalf("Tidy with a done ctx = %+v, %v; want nothing removed, context.Canceled", tidied, err)
		}
		if tidied, err = deps.Tidy(context.Background(), state, limits.UnusedFor, time.Now()); err != nil || stored == 0 || tidied.Objects != stored || tidied.ObjectBytes <= 0 {
			t.Fatalf("Tidy = %+v, %v; want the %d objects of the pruned entry", tidied, err, stored)
		}
		if _, err := os.Stat(filepath.Join(state, "deps", "index", deps.GoModules, base)); !os.IsNotExist(err) {
			t.Errorf("the install record of the pruned entry stays: %v", err)
		}
		// Nothing is left but directories.
		filepath.WalkDir(filepath.Join(state, "deps"), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				t.Errorf("left in the cache: %s", p)
			}
			return nil
		})
	})

	t.Run("after pruning a run imports afresh", func(t *testing.T) {
		p, err := prepare(t, r, state, base, base, deps.GoModules, deps.GoOptions{ModuleCache: modcache})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if rs := p.Receipts(); len(rs) != 1 || rs[0].Reused || rs[0].Key != imp.Receipt.Key {
			t.Fatalf("receipts %+v: want the same key, imported again", rs)
		}
	})
}
