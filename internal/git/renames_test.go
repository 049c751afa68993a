package git_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/internal/gittest"
)

// TestRenames: git's renames between two commits, with their similarity,
// whatever the repository's own diff config says; bounded by count and by
// path bytes (the rest is counted as truncated, never an error).
func TestRenames(t *testing.T) {
	r := gittest.New(t)
	body := strings.Repeat("line of a test file\n", 20)
	r.Write("tests/test_a.py", body)
	r.Write("pkg/cart/cart_test.go", "package cart\n"+body)
	r.Write("pkg/cart/cart.go", "package cart\n"+body+"// cart\n")
	r.Write("docs/a b.md", body+"doc\n")
	r.Write("gone.txt", "unrelated\n")
	from := r.Commit("base")
	// A repository's config must not change what is detected.
	r.Git("config", "diff.renames", "false")
	r.Git("config", "diff.renameLimit", "1")
	for _, d := range []string{"unit/tests", "internal"} {
		if err := os.MkdirAll(filepath.Join(r.Dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r.Git("mv", "tests/test_a.py", "unit/tests/test_a.py")
	r.Git("mv", "pkg/cart", "internal/cart")
	r.Write("internal/cart/cart.go", "package cart\n"+body+"// cart, edited\n")
	r.Git("mv", "docs/a b.md", "docs/c\td.md")
	r.Remove("gone.txt")
	r.Write("new.txt", "something else entirely\n")
	to := r.Commit("moves")
	repo, err := git.Open(context.Background(), r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	got, truncated, err := repo.Renames(context.Background(), from, to, 100, 1<<20)
	if err != nil || truncated {
		t.Fatal(err, truncated)
	}
	want := []git.Rename{{"docs/a b.md", "docs/c\td.md", 100}, {"pkg/cart/cart_test.go", "internal/cart/cart_test.go", 100},
		{"tests/test_a.py", "unit/tests/test_a.py", 100}}
	var sims []int
	got = slices.DeleteFunc(got, func(x git.Rename) bool {
		if x.From == "pkg/cart/cart.go" {
			sims = append(sims, x.Similarity)
			return x.To == "internal/cart/cart.go" && x.Similarity < 100 && x.Similarity >= 50
		}
		return false
	})
	slices.SortFunc(got, func(a, b git.Rename) int { return strings.Compare(a.From, b.From) })
	if !slices.Equal(got, want) || len(sims) != 1 {
		t.Fatalf("renames %+v (edited file similarity %v), want %+v and the edited cart.go", got, sims, want)
	}
	for _, b := range []struct {
		max   int
		bytes int64
	}{{2, 1 << 20}, {100, 40}} {
		got, truncated, err := repo.Renames(context.Background(), from, to, b.max, b.bytes)
		if err != nil || !truncated || len(got) > b.max {
			t.Errorf("bounds %+v: %d renames, truncated %v, %v", b, len(got), truncated, err)
		}
	}
}

// TestReadFilesAt: many paths, one process; absent paths, directories and
// names git cannot be asked for are left out.
func TestReadFilesAt(t *testing.T) {
	r := gittest.New(t)
	r.Write("go.mod", "module example.com/m\n")
	r.Write("sub dir/go.mod", "module example.com/m/sub\n")
	r.Write("big/go.mod", strings.Repeat("x", 100))
	c := r.Commit("mods")
	repo, err := git.Open(context.Background(), r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := repo.ReadFilesAt(context.Background(), c, []string{"go.mod", "a/go.mod", "sub dir/go.mod", "sub dir", "x missing", "big/go.mod", "bad\nname"}, 50)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || string(got["go.mod"]) != "module example.com/m\n" || string(got["sub dir/go.mod"]) != "module example.com/m/sub\n" {
		t.Fatalf("read %q", got)
	}
}
