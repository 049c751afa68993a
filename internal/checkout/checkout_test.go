package checkout_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/runmill/verify/internal/testreq"

	"github.com/runmill/verify/internal/checkout"
	"github.com/runmill/verify/internal/mountinfo"
	"github.com/runmill/verify/pkg/rmerr"
	"github.com/runmill/verify/pkg/treehash"
)

// git runs git for the tests with a fixed identity and no user config.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := gitErr(dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func gitErr(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Runmill Test", "GIT_AUTHOR_EMAIL=test@runmill.invalid",
		"GIT_COMMITTER_NAME=Runmill Test", "GIT_COMMITTER_EMAIL=test@runmill.invalid",
		"GIT_AUTHOR_DATE=2024-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2024-01-01T00:00:00Z")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%v: %s", err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// testRepo is a small real repository with two commits (base and
// candidate), an executable, a symlink, nested directories and a tag.
type testRepo struct {
	dir, base, candidate string
}

func newRepo(t testing.TB, initArgs ...string) testRepo {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	git(t, filepath.Dir(dir), append([]string{"init", "-q", "-b", "main"}, append(initArgs, dir)...)...)
	files := map[string]string{
		"go.mod":            "module example.com/x\n",
		"main.go":           "package main\n\nfunc main() {}\n",
		"internal/a/a.go":   "package a\n",
		"internal/a/b/b.go": "package b\n",
		"testdata/fix.json": `{"ok": true}` + "\n",
		".gitignore":        "node_modules/\n",
	}
	for p, c := range files {
		writeFile(t, filepath.Join(dir, p), c, 0o644)
	}
	writeFile(t, filepath.Join(dir, "run.sh"), "#!/bin/sh\necho run\n", 0o755)
	if err := os.Symlink("main.go", filepath.Join(dir, "link.go")); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "base")
	git(t, dir, "tag", "-a", "-m", "v1", "v1.0.0")
	base := git(t, dir, "rev-parse", "HEAD")
	writeFile(t, filepath.Join(dir, "main.go"), "package main\n\nfunc main() { println(1) }\n", 0o644)
	git(t, dir, "commit", "-q", "-am", "candidate")
	return testRepo{dir: dir, base: base, candidate: git(t, dir, "rev-parse", "HEAD")}
}

func writeFile(t testing.TB, p, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func newManager(t testing.TB, repo string) *checkout.Manager {
	t.Helper()
	m, err := checkout.NewManager(context.Background(), repo, filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatalf("NewManager: %v", err)
	}
	t.Cleanup(func() {
		if err := m.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return m
}

// newLayeredManager is newManager in layered mode (overlay mounts over one
// written tree per commit). It needs root; with CI=true a machine where it
// cannot run fails the test instead of skipping it.
func newLayeredManager(t testing.TB, repo string) *checkout.Manager {
	t.Helper()
	m := newManager(t, repo)
	err := m.EnableLayers()
	testreq.Need(t, err == nil, "layered checkouts unavailable here: %v", err)
	return m
}

// modes runs f once with full checkouts and once with layered ones.
func modes(t *testing.T, f func(t *testing.T, newM func(testing.TB, string) *checkout.Manager)) {
	t.Run("full", func(t *testing.T) { f(t, newManager) })
	t.Run("layered", func(t *testing.T) { f(t, newLayeredManager) })
}

// archiveDigest extracts the commit with `git archive` (an independent path
// from git's object store to files) and hashes the result.
func archiveDigest(t *testing.T, repo, commit string) treehash.Digest {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", `git -C "$1" archive --format=tar "$2" | tar -x -C "$3"`, "sh", repo, commit, dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git archive: %v: %s", err, out)
	}
	d, _, err := treehash.Sum(context.Background(), dir, treehash.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestCreateIsTheExactCommit(t *testing.T) { modes(t, testCreateIsTheExactCommit) }

func testCreateIsTheExactCommit(t *testing.T, newManager func(testing.TB, string) *checkout.Manager) {
	r := newRepo(t)
	m := newManager(t, r.dir)
	for _, tc := range []struct{ name, rev, want string }{
		{"base by id", r.base, r.base},
		{"candidate by id", r.candidate, r.candidate},
		{"by branch name", "main", r.candidate},
		{"by tag (peeled to its commit)", "v1.0.0", r.base},
		{"by abbreviation", r.base[:10], r.base},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := m.Create(context.Background(), tc.rev)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Remove()
			if c.Commit != tc.want {
				t.Errorf("Commit = %s, want %s", c.Commit, tc.want)
			}
			if head := git(t, c.Dir, "rev-parse", "HEAD"); head != tc.want {
				t.Errorf("HEAD = %s, want %s", head, tc.want)
			}
			if _, err := gitErr(c.Dir, "symbolic-ref", "-q", "HEAD"); err == nil {
				t.Error("HEAD is on a branch, want detached")
			}
			if st := git(t, c.Dir, "status", "--porcelain"); st != "" {
				t.Errorf("fresh checkout is not clean:\n%s", st)
			}
			if got, want := digest(t, c.Dir), archiveDigest(t, r.dir, tc.want); got != want {
				t.Errorf("checkout tree %s differs from git archive of the commit %s", got, want)
			}
			if st, err := os.Stat(filepath.Join(c.Dir, "run.sh")); err != nil || st.Mode()&0o100 == 0 {
				t.Errorf("run.sh lost its exec bit: %v %v", st.Mode(), err)
			}
			if l, err := os.Readlink(filepath.Join(c.Dir, "link.go")); err != nil || l != "main.go" {
				t.Errorf("link.go = %q, %v; want a symlink to main.go", l, err)
			}
			// The refs snapshot: tags and branches resolve as in the repository.
			if d := git(t, c.Dir, "describe", "--tags", "--always", r.base); d != "v1.0.0" {
				t.Errorf("git describe = %q, want v1.0.0", d)
			}
			if !strings.HasPrefix(c.Dir, filepath.Dir(filepath.Dir(filepath.Dir(c.Dir)))) || strings.HasPrefix(c.Dir, r.dir) {
				t.Errorf("checkout %s is not under the state directory", c.Dir)
			}
		})
	}
}

func digest(t *testing.T, dir string) treehash.Digest {
	t.Helper()
	d, _, err := treehash.Sum(context.Background(), dir, treehash.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestCheckoutsAreIndependent: a check that mutates its tree cannot
// contaminate the next check's checkout of the same commit.
func TestCheckoutsAreIndependent(t *testing.T) { modes(t, testCheckoutsAreIndependent) }

func testCheckoutsAreIndependent(t *testing.T, newManager func(testing.TB, string) *checkout.Manager) {
	r := newRepo(t)
	m := newManager(t, r.dir)
	first, err := m.Create(context.Background(), r.candidate)
	if err != nil {
		t.Fatal(err)
	}
	pristine := digest(t, first.Dir)
	writeFile(t, filepath.Join(first.Dir, "testdata/fix.json"), `{"ok": false}`, 0o644)
	writeFile(t, filepath.Join(first.Dir, "untracked.txt"), "x", 0o644)
	os.Remove(filepath.Join(first.Dir, "main.go"))
	os.Chmod(filepath.Join(first.Dir, "run.sh"), 0o644)
	// A concurrent checkout of the same commit sees none of it (in layered
	// mode the two share one written tree).
	concurrent, err := m.Create(context.Background(), r.candidate)
	if err != nil {
		t.Fatal(err)
	}
	if d := digest(t, concurrent.Dir); d != pristine {
		t.Errorf("a concurrent checkout %s, want the pristine tree %s", d, pristine)
	}
	concurrent.Remove()
	if err := first.Remove(); err != nil {
		t.Fatal(err)
	}
	second, err := m.Create(context.Background(), r.candidate)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Remove()
	if second.Dir == first.Dir {
		t.Errorf("the second checkout reuses the first's path %s", first.Dir)
	}
	if d := digest(t, second.Dir); d != pristine {
		t.Errorf("second checkout %s, want the pristine tree %s", d, pristine)
	}
}

func TestCreateRefused(t *testing.T) {
	r := newRepo(t)
	m := newManager(t, r.dir)
	tree := git(t, r.dir, "rev-parse", "HEAD^{tree}")
	for _, tc := range []struct {
		name, rev string
		code      rmerr.Code
	}{
		{"unknown revision", "no-such-branch", rmerr.GitRevision},
		{"unknown object id", strings.Repeat("1", 40), rmerr.GitRevision},
		{"a tree, not a commit", tree, rmerr.GitRevision},
		{"an option", "--all", rmerr.GitRevision},
		{"empty", "", rmerr.GitRevision},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := m.Create(context.Background(), tc.rev)
			if code := rmerr.CodeOf(err); code != tc.code {
				t.Fatalf("Create(%q) = %v, %v; want %s", tc.rev, c, err, tc.code)
			}
		})
	}
}

func TestNewManagerRefused(t *testing.T) {
	r := newRepo(t)
	for _, tc := range []struct {
		name, repo, state string
		code              rmerr.Code
	}{
		{"not a repository", t.TempDir(), t.TempDir(), rmerr.GitRepository},
		{"state inside the working tree", r.dir, filepath.Join(r.dir, "state"), rmerr.CheckoutCreate},
		{"state inside .git", r.dir, filepath.Join(r.dir, ".git", "runmill"), rmerr.CheckoutCreate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(tc.repo))
			m, err := checkout.NewManager(context.Background(), tc.repo, tc.state)
			if code := rmerr.CodeOf(err); code != tc.code {
				if m != nil {
					m.Close(context.Background())
				}
				t.Fatalf("NewManager = %v; want %s", err, tc.code)
			}
		})
	}
}

// TestHostEnvironmentCannotRedirectGit: runmill may itself run under a git
// hook or a CI step that exports GIT_DIR and friends.
func TestHostEnvironmentCannotRedirectGit(t *testing.T) {
	r := newRepo(t)
	other := newRepo(t)
	t.Setenv("GIT_DIR", filepath.Join(other.dir, ".git"))
	t.Setenv("GIT_INDEX_FILE", filepath.Join(t.TempDir(), "index"))
	t.Setenv("GIT_OBJECT_DIRECTORY", t.TempDir())
	m := newManager(t, r.dir)
	c, err := m.Create(context.Background(), "main")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Remove()
	if c.Commit != r.candidate {
		t.Errorf("Commit = %s, want %s of the named repository", c.Commit, r.candidate)
	}
}

func TestRemove(t *testing.T) { modes(t, testRemove) }

func testRemove(t *testing.T, newManager func(testing.TB, string) *checkout.Manager) {
	r := newRepo(t)
	m := newManager(t, r.dir)
	create := func(t *testing.T) *checkout.Checkout {
		c, err := m.Create(context.Background(), r.candidate)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	gone := func(t *testing.T, c *checkout.Checkout) {
		t.Helper()
		if _, err := os.Lstat(c.Dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("checkout %s still exists after Remove: %v", c.Dir, err)
		}
	}
	t.Run("twice", func(t *testing.T) {
		c := create(t)
		if err := c.Remove(); err != nil {
			t.Fatal(err)
		}
		if err := c.Remove(); err != nil {
			t.Fatalf("second Remove: %v", err)
		}
		gone(t, c)
	})
	t.Run("concurrently", func(t *testing.T) {
		c := create(t)
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = c.Remove()
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Errorf("Remove: %v", err)
			}
		}
		gone(t, c)
	})
	t.Run("after a panic, from a defer", func(t *testing.T) {
		var c *checkout.Checkout
		func() {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			c = create(t)
			defer c.Remove()
			panic("check runner crashed")
		}()
		gone(t, c)
	})
	t.Run("read-only tree", func(t *testing.T) {
		c := create(t)
		if out, err := exec.Command("chmod", "-R", "a-w", c.Dir).CombinedOutput(); err != nil {
			t.Fatalf("chmod: %v %s", err, out)
		}
		if err := c.Remove(); err != nil {
			t.Fatal(err)
		}
		gone(t, c)
	})
	t.Run("deleted from under it", func(t *testing.T) {
		if m.Layered() {
			t.Skip("a layered checkout is a mount point: nothing can delete it from under its Manager")
		}
		c := create(t)
		if err := os.RemoveAll(c.Dir); err != nil {
			t.Fatal(err)
		}
		if err := c.Remove(); err != nil {
			t.Fatalf("Remove of a vanished checkout: %v", err)
		}
	})
	// Wait is the end of the background deletions: afterwards nothing of any
	// removed checkout is left on disk.
	if err := m.Wait(context.Background()); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	session := filepath.Dir(create(t).Dir)
	if left, err := os.ReadDir(filepath.Join(session, "trash")); err != nil || len(left) != 0 {
		t.Errorf("after Wait the trash holds %v (%v)", left, err)
	}
}

// TestCloseRemovesEverything: checkouts a caller forgot are destroyed by
// Close, which leaves nothing of the session behind.
func TestCloseRemovesEverything(t *testing.T) {
	t.Run("full", func(t *testing.T) { testCloseRemovesEverything(t, false) })
	t.Run("layered", func(t *testing.T) { testCloseRemovesEverything(t, true) })
}

func testCloseRemovesEverything(t *testing.T, layered bool) {
	r := newRepo(t)
	state := filepath.Join(t.TempDir(), "state")
	m, err := checkout.NewManager(context.Background(), r.dir, state)
	if err != nil {
		t.Fatal(err)
	}
	if layered {
		err := m.EnableLayers()
		testreq.Need(t, err == nil, "layered checkouts unavailable here: %v", err)
	}
	var dirs []string
	for range 3 {
		c, err := m.Create(context.Background(), r.base)
		if err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, c.Dir)
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if mounts := mountsUnder(t, state); len(mounts) != 0 {
		t.Errorf("after Close, mounts remain: %q", mounts)
	}
	left, _ := os.ReadDir(filepath.Join(state, "checkouts"))
	if len(left) != 0 {
		t.Errorf("after Close, checkouts/ holds %v", left)
	}
	for _, d := range dirs {
		if _, err := os.Lstat(d); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("after Close, checkout %s: %v, want it gone", d, err)
		}
	}
	if _, err := m.Create(context.Background(), r.base); rmerr.CodeOf(err) != rmerr.CheckoutCreate {
		t.Errorf("Create after Close = %v, want %s", err, rmerr.CheckoutCreate)
	}
}

func TestReadOnlyPaths(t *testing.T) {
	r := newRepo(t)
	// A repository borrowing objects from another (git clone --shared):
	// the alternate is part of what the sandbox must bind.
	borrower := filepath.Join(t.TempDir(), "borrower")
	git(t, r.dir, "clone", "-q", "--shared", r.dir, borrower)
	m := newManager(t, borrower)
	c, err := m.Create(context.Background(), r.candidate)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Remove()
	real := func(p string) string {
		q, err := filepath.EvalSymlinks(p)
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	want := []string{c.Dir, real(filepath.Join(borrower, ".git", "objects")), real(filepath.Join(r.dir, ".git", "objects"))}
	if got := c.ReadOnlyPaths(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("ReadOnlyPaths = %q, want %q", got, want)
	}
	if !strings.HasPrefix(c.GitDir, c.Dir+"/") {
		t.Errorf("GitDir %s is not inside Dir %s: one bind would not cover it", c.GitDir, c.Dir)
	}
}

func TestShallowAndSHA256Repositories(t *testing.T) {
	t.Run("shallow clone", func(t *testing.T) {
		r := newRepo(t)
		shallow := filepath.Join(t.TempDir(), "shallow")
		git(t, r.dir, "clone", "-q", "--depth=1", "file://"+r.dir, shallow)
		m := newManager(t, shallow)
		c, err := m.Create(context.Background(), "HEAD")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Remove()
		if log := git(t, c.Dir, "log", "--format=%s"); log != "candidate" {
			t.Errorf("git log in a checkout of a shallow clone = %q", log)
		}
	})
	t.Run("sha256 objects", func(t *testing.T) {
		r := newRepo(t, "--object-format=sha256")
		m := newManager(t, r.dir)
		c, err := m.Create(context.Background(), r.candidate)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Remove()
		if len(c.Commit) != 64 || git(t, c.Dir, "rev-parse", "HEAD") != c.Commit {
			t.Errorf("sha256 checkout HEAD = %s", git(t, c.Dir, "rev-parse", "HEAD"))
		}
		if st := git(t, c.Dir, "status", "--porcelain"); st != "" {
			t.Errorf("not clean: %s", st)
		}
	})
}

func TestGitEnv(t *testing.T) {
	env := checkout.GitEnv()
	joined := strings.Join(env, "\n")
	for _, want := range []string{"GIT_OPTIONAL_LOCKS=0", "GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0=*", "core.fsmonitor"} {
		if !strings.Contains(joined, want) {
			t.Errorf("GitEnv lacks %q:\n%s", want, joined)
		}
	}
	// git itself must read every key back (a miscounted GIT_CONFIG_COUNT
	// silently drops the last ones).
	cmd := exec.Command("git", "config", "--list", "--show-scope")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"safe.directory=*", "core.fsmonitor=false", "core.untrackedcache=false", "gc.auto=0", "maintenance.auto=false"} {
		if !strings.Contains(string(out), "command\t"+key) {
			t.Errorf("git does not see %s at command scope:\n%s", key, out)
		}
	}
}

// TestRestrictiveUmask: under umask 077 the checkout must still be readable
// by the sandbox's non-root user, who owns none of it.
func TestRestrictiveUmask(t *testing.T) {
	r := newRepo(t)
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	m := newManager(t, r.dir)
	c, err := m.Create(context.Background(), r.candidate)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Remove()
	for p, want := range map[string]os.FileMode{
		".":               0o755,
		"main.go":         0o644,
		"run.sh":          0o755,
		"internal/a":      0o755,
		"internal/a/b":    0o755,
		".git":            0o755,
		".git/HEAD":       0o644,
		".git/index":      0o644,
		".git/objects":    0o755,
		".git/config":     0o644,
		"internal/a/a.go": 0o644,
	} {
		st, err := os.Lstat(filepath.Join(c.Dir, p))
		if err != nil {
			t.Error(err)
			continue
		}
		if got := st.Mode().Perm(); got != want {
			t.Errorf("%s has mode %o, want %o", p, got, want)
		}
	}
}

// TestCreateCancelled leaves nothing behind.
func TestCreateCancelled(t *testing.T) {
	r := newRepo(t)
	m := newManager(t, r.dir)
	if _, err := m.Create(context.Background(), r.base); err != nil { // warm the commit cache
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if c, err := m.Create(ctx, r.base); err == nil {
		t.Fatalf("Create with a cancelled context made %s", c.Dir)
	}
	if err := m.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	list, _ := filepath.Glob(filepath.Join(filepath.Dir(mustCreate(t, m, r.base)), "*"))
	if len(list) != 3 { // trash, the warm-up checkout and the last one
		t.Errorf("session holds %v", list)
	}
}

// mountsUnder lists this namespace's mount points below dir.
func mountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	out, err := mountinfo.Under(dir + "/")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mustCreate(t *testing.T, m *checkout.Manager, rev string) string {
	t.Helper()
	c, err := m.Create(context.Background(), rev)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Remove() })
	return c.Dir
}
