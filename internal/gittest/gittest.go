// Package gittest builds real git repositories in temp dirs for tests.
package gittest

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Repo is a scratch repository.
type Repo struct {
	t   testing.TB
	Dir string
}

// New makes an empty repository with a main branch.
func New(t testing.TB) *Repo {
	t.Helper()
	r := &Repo{t: t, Dir: t.TempDir()}
	r.Git("init", "-q", "-b", "main")
	return r
}

// Git runs git in the repository and returns trimmed stdout.
func (r *Repo) Git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{"-C", r.Dir}, args...)...)
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=runmill test", "GIT_AUTHOR_EMAIL=test@runmill.invalid",
		"GIT_COMMITTER_NAME=runmill test", "GIT_COMMITTER_EMAIL=test@runmill.invalid",
		"GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z",
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// Write creates or replaces a file (parents included).
func (r *Repo) Write(path, content string) {
	r.t.Helper()
	full := filepath.Join(r.Dir, path)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// Symlink creates a symlink at path (parents included) pointing at target.
func (r *Repo) Symlink(target, path string) {
	r.t.Helper()
	full := filepath.Join(r.Dir, path)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.Symlink(target, full); err != nil {
		r.t.Fatal(err)
	}
}

// Remove deletes a path.
func (r *Repo) Remove(path string) {
	r.t.Helper()
	if err := os.RemoveAll(filepath.Join(r.Dir, path)); err != nil {
		r.t.Fatal(err)
	}
}

// Commit stages everything and commits; it returns the commit id.
func (r *Repo) Commit(msg string) string {
	r.t.Helper()
	r.Git("add", "-A")
	r.Git("commit", "-q", "--allow-empty", "-m", msg)
	return r.Git("rev-parse", "HEAD")
}

// Checkout switches branch, creating it with -b when create is true.
func (r *Repo) Checkout(branch string, create bool) {
	r.t.Helper()
	if create {
		r.Git("checkout", "-q", "-b", branch)
	} else {
		r.Git("checkout", "-q", branch)
	}
}

// Plumbing: objects written directly, so a test can make a tree of a
// million paths or gigabytes of files (issue 23) from a few small objects,
// without a file of it on disk.

// Blob stores what r reads as a blob and returns its id.
func (r *Repo) Blob(content io.Reader) string {
	r.t.Helper()
	return r.gitIn(content, "hash-object", "-w", "--stdin")
}

// Zeros stores n zero bytes as a blob and returns its id: a megabyte of
// them is a kilobyte of objects.
func (r *Repo) Zeros(n int64) string {
	r.t.Helper()
	return r.Blob(io.LimitReader(zeroReader{}, n))
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TreeEntry is one entry of a tree object.
type TreeEntry struct {
	Mode string // "100644", "100755", "120000", "040000", "160000"
	ID   string // the blob, tree or commit it names
	Name string
}

// Tree stores a tree object of entries and returns its id.
func (r *Repo) Tree(entries ...TreeEntry) string {
	r.t.Helper()
	var in strings.Builder
	for _, e := range entries {
		typ := map[string]string{"040000": "tree", "160000": "commit"}[e.Mode]
		if typ == "" {
			typ = "blob"
		}
		fmt.Fprintf(&in, "%s %s %s\t%s\x00", e.Mode, typ, e.ID, e.Name)
	}
	return r.gitIn(strings.NewReader(in.String()), "mktree", "-z", "--missing")
}

// Fanout is a tree of n entries named fmt.Sprintf(format, i), each mode and
// id: a directory of n references to one object.
func (r *Repo) Fanout(format string, n int, mode, id string) string {
	r.t.Helper()
	entries := make([]TreeEntry, n)
	for i := range entries {
		entries[i] = TreeEntry{Mode: mode, ID: id, Name: fmt.Sprintf(format, i)}
	}
	return r.Tree(entries...)
}

// CommitTree commits tree with parent ("" for none) and returns the commit;
// no branch moves.
func (r *Repo) CommitTree(tree, parent, msg string) string {
	r.t.Helper()
	args := []string{"commit-tree", tree, "-m", msg}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	return r.Git(args...)
}

// gitIn runs git with stdin and returns trimmed stdout.
func (r *Repo) gitIn(stdin io.Reader, args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{"-C", r.Dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	cmd.Stdin = stdin
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}
