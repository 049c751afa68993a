package git_test

import (
	"context"
	"slices"
	"testing"

	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/internal/gittest"
)

// TestLanding: a candidate containing the base tip lands as itself; one
// behind it lands as git's three-way merge in a synthetic commit whose id
// depends only on its parents and tree (two calls agree) and which moves no
// ref, index or work tree; a conflicting one has no landing commit and
// names the paths.
func TestLanding(t *testing.T) {
	ctx := context.Background()
	r := gittest.New(t)
	r.Write("a.txt", "a\n")
	r.Write("b.txt", "b\n")
	fork := r.Commit("fork")
	r.Checkout("change", true)
	r.Write("b.txt", "b changed\n")
	change := r.Commit("change b")
	r.Git("checkout", "-q", "-b", "conflict", fork)
	r.Write("a.txt", "a from the change\n")
	conflict := r.Commit("change a")
	r.Checkout("main", false)
	r.Write("a.txt", "a from main\n")
	r.Write("c.txt", "c\n")
	r.Commit("main gains c")
	r.Write("d.txt", "d\n")
	tip := r.Commit("main gains d")
	repo, err := git.Open(ctx, r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	refs, status := r.Git("for-each-ref"), r.Git("status", "--porcelain")

	// The base tip contains fork: a candidate at main's tip is ahead of itself.
	same, err := repo.Landing(ctx, fork, tip)
	if err != nil {
		t.Fatal(err)
	}
	if same.Commit != tip || same.Merged || same.Behind != 0 || same.Tree != r.Git("rev-parse", tip+"^{tree}") || same.Conflicts != nil {
		t.Fatalf("candidate containing the base tip: %+v, want itself (%s)", same, tip)
	}

	l, err := repo.Landing(ctx, tip, change)
	if err != nil {
		t.Fatal(err)
	}
	if !l.Merged || l.Behind != 2 || l.Conflicts != nil {
		t.Fatalf("behind candidate: %+v, want a merge 2 behind", l)
	}
	if parents := r.Git("rev-list", "--parents", "-n1", l.Commit); parents != l.Commit+" "+tip+" "+change {
		t.Fatalf("landing commit's parents: %q, want the base tip then the candidate", parents)
	}
	if got := r.Git("rev-parse", l.Commit+"^{tree}"); got != l.Tree {
		t.Fatalf("landing tree %s, the commit's %s", l.Tree, got)
	}
	for path, want := range map[string]string{"a.txt": "a from main", "b.txt": "b changed", "d.txt": "d"} {
		if got := r.Git("show", l.Commit+":"+path); got != want {
			t.Errorf("%s in the landing tree is %q, want %q", path, got, want)
		}
	}
	again, err := repo.Landing(ctx, tip, change)
	if err != nil {
		t.Fatal(err)
	}
	if again.Commit != l.Commit {
		t.Fatalf("two landings of the same pair: %s and %s", l.Commit, again.Commit)
	}

	c, err := repo.Landing(ctx, tip, conflict)
	if err != nil {
		t.Fatal(err)
	}
	if c.Commit != "" || c.Tree != "" || c.Behind != 2 || !slices.Equal(c.Conflicts, []string{"a.txt"}) {
		t.Fatalf("conflicting candidate: %+v, want no commit and the conflict in a.txt", c)
	}
	if r.Git("for-each-ref") != refs || r.Git("status", "--porcelain") != status {
		t.Fatal("Landing moved a ref, the index or the work tree")
	}
}
