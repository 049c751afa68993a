package git_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/internal/gittest"
)

// gitLog puts a git on PATH that records each invocation's arguments (from
// the subcommand on) before it runs the real git, and returns the reader of
// that record.
func gitLog(t *testing.T) func() []string {
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	script := "#!/bin/sh\n" +
		// Past -C DIR and the -c settings Run adds: the subcommand and its arguments.
		"a=\"$*\"; echo \"${a#* safe.directory=\\* }\" >> " + log + "\n" +
		"exec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return func() []string {
		b, _ := os.ReadFile(log)
		os.Remove(log)
		return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	}
}

// TestRepoKeepsAnswers: what git says about a commit named by its full id
// is asked once per Repo — its tree listed by one git process for TreeSize,
// Files, TrackedFiles and Symlinks, one file stated and read once, one
// change's paths listed once — and the kept answers equal a fresh Repo's.
// A revision that can move (a branch) is asked again every time.
func TestRepoKeepsAnswers(t *testing.T) {
	r := gittest.New(t)
	r.Write(".runmill/checks.yaml", "checks: []\n")
	r.Write("a/b.txt", "b\n")
	r.Symlink("b.txt", "a/link")
	base := r.Commit("base")
	r.Write("a/c.txt", "c\n")
	cand := r.Commit("cand")
	ctx := context.Background()
	type answers struct {
		size    git.TreeSize
		files   int
		tracked []string
		links   map[string]string
		read    string
		changed []string
	}
	ask := func(repo *git.Repo, commit string) answers {
		t.Helper()
		var a answers
		var err error
		must := func(e error) {
			t.Helper()
			if e != nil {
				t.Fatal(e)
			}
		}
		a.size, err = repo.TreeSize(ctx, commit)
		must(err)
		files, err := repo.Files(ctx, commit)
		must(err)
		a.files = len(files)
		a.tracked, err = repo.TrackedFiles(ctx, commit)
		must(err)
		a.links, _, err = repo.Symlinks(ctx, commit)
		must(err)
		data, err := repo.ReadAt(ctx, commit, ".runmill/checks.yaml", 1<<20)
		must(err)
		a.read = string(data)
		a.changed, err = repo.ChangedPaths(ctx, base, commit)
		must(err)
		id, err := repo.ResolveCommit(ctx, commit, "--candidate")
		must(err)
		if id != cand {
			t.Errorf("ResolveCommit(%s) = %s, want %s", commit, id, cand)
		}
		return a
	}
	calls := gitLog(t)
	repo, err := git.Open(ctx, r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	calls()
	first := ask(repo, cand)
	firstCalls := calls()
	second := ask(repo, cand)
	again := calls()
	fresh := ask(&git.Repo{Dir: r.Dir}, cand)
	calls()
	for _, a := range []answers{second, fresh} {
		if a.size != first.size || a.files != first.files || !slices.Equal(a.tracked, first.tracked) ||
			len(a.links) != len(first.links) || a.links["a/link"] != "b.txt" || a.read != first.read || !slices.Equal(a.changed, first.changed) {
			t.Errorf("answers %+v, want %+v", a, first)
		}
	}
	if first.files != 4 || !slices.Equal(first.changed, []string{"a/c.txt"}) {
		t.Errorf("answers %+v", first)
	}
	count := func(log []string, prefix string) int {
		n := 0
		for _, c := range log {
			if strings.HasPrefix(c, prefix) {
				n++
			}
		}
		return n
	}
	for _, prefix := range []string{"ls-tree -r", "ls-tree -z --long", "cat-file blob", "diff --name-only", "rev-parse --verify"} {
		if n := count(firstCalls, prefix); n != 1 {
			t.Errorf("%d × git %s…, want 1: %q", n, prefix, firstCalls)
		}
		if n := count(again, prefix); n != 0 {
			t.Errorf("asked again: %d × git %s…, want none: %q", n, prefix, again)
		}
	}
	// A branch can move: its tree is listed, and its name resolved, each time.
	r.Checkout("moving", true)
	for range 2 {
		if _, err := repo.Files(ctx, "moving"); err != nil {
			t.Fatal(err)
		}
		if _, err := repo.ResolveCommit(ctx, "moving", "--candidate"); err != nil {
			t.Fatal(err)
		}
	}
	log := calls()
	if n, m := count(log, "ls-tree -r"), count(log, "rev-parse --verify"); n != 2 || m != 2 {
		t.Errorf("a branch: %d listings and %d resolutions, want 2 each: %q", n, m, log)
	}
}
