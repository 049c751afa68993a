package harness_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/runmill/verify/pkg/harness"
	"github.com/runmill/verify/pkg/pathglob"
	"github.com/runmill/verify/pkg/rmerr"
)

func entry(blob string) harness.Entry {
	return harness.Entry{Mode: "100644", Blob: strings.Repeat(blob, 40)}
}

func TestResolve(t *testing.T) {
	base := harness.Tree{"scripts/test.sh": entry("a"), "jest.config.js": entry("b"), "src/x.js": entry("c")}
	type want struct {
		ran            map[string]harness.Source
		changed, added []string
	}
	run := func(t *testing.T, command string, patterns []string, commit harness.Tree, pinned bool, w want) {
		t.Helper()
		d, err := harness.Discover(command, base, nil)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := harness.Resolve(context.Background(), d, patterns, base, commit, pinned, strings.Repeat("f", 40))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]harness.Source{}
		for _, f := range rec.Files {
			got[f.Path] = f.Ran
		}
		if len(got) != len(w.ran) {
			t.Fatalf("files %v, want %v", got, w.ran)
		}
		for p, s := range w.ran {
			if got[p] != s {
				t.Errorf("%s ran %q, want %q", p, got[p], s)
			}
		}
		if strings.Join(rec.ChangedPaths(), ",") != strings.Join(w.changed, ",") {
			t.Errorf("changed %v, want %v", rec.ChangedPaths(), w.changed)
		}
		if strings.Join(rec.NewPaths(), ",") != strings.Join(w.added, ",") {
			t.Errorf("new %v, want %v", rec.NewPaths(), w.added)
		}
		laid := len(w.changed) + len(w.added)
		if !pinned {
			laid = 0
		}
		if len(rec.Overlay()) != laid || rec.Changed() != (laid > 0) {
			t.Errorf("overlay %v, want the changed files %v and the removal of the new ones %v", rec.Overlay(), w.changed, w.added)
		}
		for _, pin := range rec.Overlay() {
			if pin.Remove != slices.Contains(w.added, pin.Path) {
				t.Errorf("pin %+v: removal %v, want %v", pin, pin.Remove, !pin.Remove)
			}
		}
		if !pinned && (rec.Reason == "" || len(rec.Overlay()) != 0) {
			t.Errorf("unpinned: reason %q, overlay %v", rec.Reason, rec.Overlay())
		}
	}
	edited := harness.Tree{"scripts/test.sh": entry("d"), "jest.config.js": entry("b"), "src/x.js": entry("e")}
	removed := harness.Tree{"jest.config.js": entry("b")}
	chmod := harness.Tree{"scripts/test.sh": {Mode: "100755", Blob: strings.Repeat("a", 40)}}
	added := harness.Tree{"scripts/test.sh": entry("a"), "jest.config.js": entry("b"), "vitest.config.ts": entry("9"), "scripts/new.sh": entry("8")}
	t.Run("an edited script runs in the base's version", func(t *testing.T) {
		run(t, "sh scripts/test.sh", nil, edited, true, want{ran: map[string]harness.Source{"scripts/test.sh": harness.FromBase}, changed: []string{"scripts/test.sh"}})
	})
	t.Run("an unchanged config is recorded, not laid", func(t *testing.T) {
		run(t, "npm test", []string{"jest.config.*"}, edited, true, want{ran: map[string]harness.Source{"jest.config.js": harness.FromBase}})
	})
	t.Run("a removed script comes back", func(t *testing.T) {
		run(t, "sh scripts/test.sh", nil, removed, true, want{ran: map[string]harness.Source{"scripts/test.sh": harness.FromBase}, changed: []string{"scripts/test.sh"}})
	})
	t.Run("a mode change is a change", func(t *testing.T) {
		run(t, "./scripts/test.sh", nil, chmod, true, want{ran: map[string]harness.Source{"scripts/test.sh": harness.FromBase}, changed: []string{"scripts/test.sh"}})
	})
	t.Run("files new in the change are kept out: the base's absence ran", func(t *testing.T) {
		run(t, "sh scripts/new.sh", []string{"*.config.*"}, added, true, want{ran: map[string]harness.Source{
			"scripts/new.sh": harness.FromBase, "jest.config.js": harness.FromBase, "vitest.config.ts": harness.FromBase},
			added: []string{"scripts/new.sh", "vitest.config.ts"}})
	})
	t.Run("a named file at neither commit is not recorded", func(t *testing.T) {
		run(t, "sh scripts/none.sh", []string{"pytest.ini"}, edited, true, want{ran: map[string]harness.Source{}})
	})
	t.Run("a policy new in the change pins nothing", func(t *testing.T) {
		run(t, "sh scripts/test.sh", nil, edited, false, want{ran: map[string]harness.Source{"scripts/test.sh": harness.FromCommit}})
		run(t, "sh scripts/new.sh", []string{"*.config.*"}, added, false, want{ran: map[string]harness.Source{
			"scripts/new.sh": harness.FromCommit, "jest.config.js": harness.FromCommit, "vitest.config.ts": harness.FromCommit},
			added: []string{"scripts/new.sh", "vitest.config.ts"}})
	})
	t.Run("a bad pattern is an error", func(t *testing.T) {
		if _, err := harness.Resolve(context.Background(), harness.Discovery{}, []string{"["}, base, edited, true, ""); err == nil {
			t.Fatal("no error")
		}
	})
}

// TestResolveLaysNoFileUnderAFile: a harness whose base files include a
// file and another file under it (a path the base has as a file and the
// candidate as a directory, say) cannot be laid down and is refused — with
// names between them that sort between a file and its descendants as plain
// strings ("a-b" between "a" and "a/b"). Random sets are held to the pair
// rule the neighbour comparison replaces.
func TestResolveLaysNoFileUnderAFile(t *testing.T) {
	resolve := func(paths []string) error {
		base, cand := harness.Tree{}, harness.Tree{}
		for _, p := range paths {
			base[p], cand[p] = entry("a"), entry("b")
		}
		_, err := harness.Resolve(context.Background(), harness.Discovery{}, paths, base, cand, true, strings.Repeat("f", 40))
		return err
	}
	for _, c := range []struct {
		paths []string
		bad   bool
	}{
		{[]string{"a", "a-b", "a.b", "a/b"}, true},
		{[]string{"a", "a-b/c", "a0", "a/b/c/d"}, true},
		{[]string{"a/b", "a-b", "a.b/c", "ab"}, false},
		{[]string{"x/y", "x/y.z", "x/yz/w"}, false},
	} {
		if err := resolve(c.paths); (err != nil) != c.bad {
			t.Errorf("%q: error %v, want an error %v", c.paths, err, c.bad)
		}
	}
	rng := rand.New(rand.NewPCG(23, 1))
	for range 2000 {
		seen := map[string]bool{}
		var paths []string
		for range 1 + rng.IntN(6) {
			var b strings.Builder
			for range 1 + rng.IntN(5) {
				b.WriteByte("ab-./"[rng.IntN(5)])
			}
			p := b.String()
			if _, err := pathglob.Compile(p); err != nil || strings.Trim(p, "/") != p || strings.Contains(p, "//") || seen[p] {
				continue
			}
			seen[p] = true
			paths = append(paths, p)
		}
		want := false
		for _, x := range paths {
			for _, y := range paths {
				want = want || strings.HasPrefix(y, x+"/")
			}
		}
		if err := resolve(paths); (err != nil) != want {
			t.Fatalf("%q: error %v, want an error %v", paths, err, want)
		}
	}
}

// TestResolveCapsTheHarness (issue 23): a glob matching 200 000 files is
// refused, naming the limit and the count, before anything is sorted; a
// harness at the cap resolves.
func TestResolveCapsTheHarness(t *testing.T) {
	base, cand := wideTrees(200_000)
	_, err := harness.Resolve(context.Background(), harness.Discovery{}, []string{"conftest.py"}, base, cand, true, strings.Repeat("f", 40))
	if rmerr.CodeOf(err) != rmerr.LimitHarnessFiles || !strings.Contains(err.Error(), "names 200000 files") || !strings.Contains(err.Error(), "10000") {
		t.Fatalf("200 000 matched files: %v", err)
	}
	base, cand = wideTrees(harness.MaxFiles)
	rec, err := harness.Resolve(context.Background(), harness.Discovery{}, []string{"conftest.py"}, base, cand, true, strings.Repeat("f", 40))
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Files) != harness.MaxFiles || len(rec.Overlay()) != harness.MaxFiles {
		t.Fatalf("%d files, %d laid; want %d of each", len(rec.Files), len(rec.Overlay()), harness.MaxFiles)
	}
	if !slices.IsSortedFunc(rec.Files, func(a, b harness.File) int { return strings.Compare(a.Path, b.Path) }) {
		t.Fatal("files not sorted by path")
	}
}

// TestResolveCancelled (issue 23): the pass over a tree of 200 000
// matching files ends with its context (SIGTERM obeyed however wide the
// trees), not with the cap's answer.
func TestResolveCancelled(t *testing.T) {
	base, cand := wideTrees(200_000)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec, err := harness.Resolve(ctx, harness.Discovery{}, []string{"conftest.py"}, base, cand, true, strings.Repeat("f", 40))
	if !errors.Is(err, context.Canceled) || rec != nil {
		t.Fatalf("cancelled: %v, %v", rec, err)
	}
}
