// Package git is runmill's plumbing over the git binary: resolve commits,
// read one file at a commit without touching the working tree, list changed
// paths. Every call runs git with a fixed, minimal configuration so a
// repository's own config (hooks, fsmonitor, pagers) cannot run code here.
package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/runmill/verify/internal/bounded"
	"github.com/runmill/verify/pkg/objectid"
	"github.com/runmill/verify/pkg/rmerr"
)

// Repo is a git repository on disk.
type Repo struct {
	Dir string // the directory given (work tree or bare repository)
	// Limits bound every listing of a tree (tree.go); set them before the
	// Repo is shared.
	Limits Limits

	mu    sync.Mutex
	sizes map[string]*answer[TreeSize] // TreeSize's answers by commit
	trees map[string]*answer[[]entry]  // listTree's listings by commit id (the entries admitted, how it ended)
	// What git answered about immutable objects (a commit or blob named by
	// its full id), kept so a second reader of the same policy file or
	// change starts no git process: ResolveCommit of a full id, Stat by
	// commit and path, ReadBlob's small blobs by id, ChangedPaths by its
	// two commits.
	commits map[string]string
	stats   map[string]Entry
	blobs   map[string][]byte
	changed map[string][]string
}

// maxKeptBlob is the largest blob ReadBlob keeps: policy files and
// lockfiles' small neighbours, not the repository's content.
const maxKeptBlob = 64 << 10

// kept returns m[key] under r.mu.
func kept[V any](r *Repo, m map[string]V, key string) (V, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := m[key]
	return v, ok
}

// keep sets (*m)[key] = v under r.mu, making the map on first use.
func keep[V any](r *Repo, m *map[string]V, key string, v V) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if *m == nil {
		*m = map[string]V{}
	}
	(*m)[key] = v
}

// Open checks that dir is a git repository.
func Open(ctx context.Context, dir string) (*Repo, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, rmerr.Wrap(rmerr.GitRepository, err, "opening repository").At(dir, 0).WithHint("pass --repo the directory of a git repository")
	}
	if !st.IsDir() {
		return nil, rmerr.New(rmerr.GitRepository, "not a directory").At(dir, 0).WithHint("pass --repo the directory of a git repository")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, rmerr.Wrap(rmerr.GitRepository, err, "resolving path").At(dir, 0)
	}
	r := &Repo{Dir: abs}
	if _, err := r.run(ctx, nil, "rev-parse", "--git-dir"); err != nil {
		return nil, rmerr.Wrap(rmerr.GitRepository, err, "not a git repository").At(dir, 0).
			WithHint("pass --repo the directory of a git repository (run 'git init' or clone it first)")
	}
	return r, nil
}

// Env is the environment every git invocation on the host gets (runmill's
// own plumbing and internal/checkout's): an allow-list, never the inherited
// environment, so git and anything it could start see no GITHUB_TOKEN, no
// signing key, no RUNMILL_* setting and no GIT_DIR/GIT_INDEX_FILE pointing it
// elsewhere (issue 13, S6). Besides PATH it holds only git's own safety
// settings: no system or global config, no prompts, no optional locks
// (read-only checkouts must work), no replace refs (a commit reads as its
// own objects, never as a refs/replace substitute), no lazy fetch of missing
// objects from a promisor remote (git ≥ 2.45; the host reads, it does not
// download), the C locale for parseable messages and a HOME with nothing in
// it.
func Env() []string {
	env := []string{
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_NO_REPLACE_OBJECTS=1",
		"GIT_NO_LAZY_FETCH=1",
		"LC_ALL=C",
		"HOME=/nonexistent",
	}
	if p, ok := os.LookupEnv("PATH"); ok {
		env = append(env, "PATH="+p)
	}
	return env
}

// run executes git in the repository and returns stdout.
func (r *Repo) run(ctx context.Context, stdout io.Writer, args ...string) ([]byte, error) {
	return Run(ctx, r.Dir, RunOptions{Stdout: stdout}, args...)
}

// RunOptions say how Run starts git. The zero value is runmill's plumbing
// in the user's repository.
type RunOptions struct {
	// Owned: dir is a checkout runmill created and owns, so git needs no
	// safe.directory exception there. Otherwise dir is the user's
	// repository: safe.directory lets root (runmill under sudo) read a
	// repository owned by the runner, because naming it with --repo is the
	// operator's trust decision, and hooks and fsmonitor, the ways a
	// repository's config could run a program here, are off either way.
	Owned bool
	// Umask022 runs git under umask 022, for a process whose umask would
	// hide the files git writes from the sandbox user. Go cannot set a
	// child's umask, so a shell does.
	Umask022 bool
	// Stdin is git's standard input (none when nil).
	Stdin io.Reader
	// Stdout receives git's output instead of Run's result when not nil.
	Stdout io.Writer
	// Env are variables added to Env's (Landing's fixed identity and
	// date); nothing of the inherited environment.
	Env []string
}

// Run is runmill's one way to start git on the host (its own plumbing and
// internal/checkout's): git -C dir with hooks and fsmonitor off, in the
// allow-listed environment of Env, in its own process group that is killed
// whole when ctx ends (parallel-checkout workers die with their git). It
// returns stdout; a failure is an *Error carrying the first 8 KiB of
// stderr.
func Run(ctx context.Context, dir string, o RunOptions, args ...string) ([]byte, error) {
	full := []string{"-C", dir, "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"}
	if !o.Owned {
		full = append(full, "-c", "safe.directory=*")
	}
	full = append(full, args...)
	cmd := command(ctx, "git", full...)
	if o.Umask022 {
		cmd = command(ctx, "sh", append([]string{"-c", `umask 022 && exec git "$@"`, "git"}, full...)...)
	}
	cmd.Env = append(Env(), o.Env...)
	cmd.Stdin = o.Stdin
	var out bytes.Buffer
	errb := &bounded.Buffer{Max: 8 << 10}
	cmd.Stdout = &out
	if o.Stdout != nil {
		cmd.Stdout = o.Stdout
	}
	cmd.Stderr = errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, &Error{Args: args, Stderr: msg, Err: err}
	}
	return out.Bytes(), nil
}

// command runs name in its own process group and kills the whole group
// when ctx ends, so no child git starts outlives the call.
func command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// Error is a failed git invocation.
type Error struct {
	Args   []string
	Stderr string
	Err    error
}

func (e *Error) Error() string {
	return fmt.Sprintf("git %s: %s", strings.Join(e.Args, " "), e.Stderr)
}

func (e *Error) Unwrap() error { return e.Err }

// ValidRevision reports whether rev may be handed to git as a revision: not
// empty, not an option, and on one line (git reads some arguments from
// NUL- or line-separated input).
func ValidRevision(rev string) bool {
	return rev != "" && !strings.HasPrefix(rev, "-") && !strings.ContainsAny(rev, "\x00\n\r")
}

// ResolveCommit turns a revision into a full commit id.
func (r *Repo) ResolveCommit(ctx context.Context, rev, flag string) (string, error) {
	if !ValidRevision(rev) {
		return "", rmerr.New(rmerr.GitRevision, "invalid revision %q", rev).InField(flag).
			WithHint("pass a commit id, branch or tag")
	}
	if id, ok := kept(r, r.commits, rev); ok {
		return id, nil
	}
	out, err := r.run(ctx, nil, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	id := strings.TrimSpace(string(out))
	if err != nil || !objectid.Valid(id) {
		return "", rmerr.New(rmerr.GitRevision, "revision %q is not a commit in %s", rev, r.Dir).InField(flag).
			WithHint("fetch it first (actions/checkout needs fetch-depth: 0) or check the spelling")
	}
	if objectid.Valid(rev) {
		keep(r, &r.commits, rev, id) // a full id names its commit for ever; a ref can move
	}
	return id, nil
}

// EntryKind is what a path names in a commit's tree.
type EntryKind int

const (
	Missing EntryKind = iota
	Blob
	Executable
	Symlink
	Tree
	Submodule
)

func (k EntryKind) String() string {
	return [...]string{"missing", "file", "executable file", "symlink", "directory", "submodule"}[k]
}

// Entry is one path in a commit's tree.
type Entry struct {
	Kind   EntryKind
	Mode   string // git's tree-entry mode, "" when Missing
	Object string
	Size   int64
}

// Stat describes path at commit without reading its content.
func (r *Repo) Stat(ctx context.Context, commit, path string) (Entry, error) {
	key := commit + "\x00" + path
	if e, ok := kept(r, r.stats, key); ok {
		return e, nil
	}
	e, err := r.stat(ctx, commit, path)
	if err == nil && objectid.Valid(commit) {
		keep(r, &r.stats, key, e)
	}
	return e, err
}

func (r *Repo) stat(ctx context.Context, commit, path string) (Entry, error) {
	out, err := r.run(ctx, nil, "ls-tree", "-z", "--long", "--full-tree", commit, "--", path)
	if err != nil {
		return Entry{}, rmerr.Wrap(rmerr.GitRepository, err, "listing %s at %s", path, objectid.Short(commit))
	}
	// "<mode> SP <type> SP <object> SP+ <size> TAB <path> NUL"
	for _, rec := range bytes.Split(out, []byte{0}) {
		meta, name, ok := bytes.Cut(rec, []byte{'\t'})
		if !ok || string(name) != path {
			continue
		}
		f := strings.Fields(string(meta))
		if len(f) != 4 {
			return Entry{}, rmerr.New(rmerr.GitRepository, "unexpected ls-tree output %q", rec)
		}
		e := Entry{Object: f[2], Mode: f[0]}
		switch f[0] {
		case "100644":
			e.Kind = Blob
		case "100755":
			e.Kind = Executable
		case "120000":
			e.Kind = Symlink
		case "040000":
			e.Kind = Tree
		case "160000":
			e.Kind = Submodule
		default:
			return Entry{}, rmerr.New(rmerr.GitRepository, "unknown mode %s for %s", f[0], path)
		}
		if e.Kind == Blob || e.Kind == Executable || e.Kind == Symlink {
			e.Size, _ = strconv.ParseInt(f[3], 10, 64)
		}
		return e, nil
	}
	return Entry{Kind: Missing}, nil
}

// MaxSymlinkTarget is the longest symlink target a checkout can hold: the
// kernel refuses a longer one (PATH_MAX, its NUL included).
const MaxSymlinkTarget = 4095

// Symlinks lists the symlinks tracked at commit with their targets as git
// stores them (what a checkout writes), and the tree's directories (what a
// link can go through), with at most three git processes however many there
// are. A target no checkout could write — longer than MaxSymlinkTarget, or
// holding a NUL — is left out: it points nowhere. Without a symlink there
// are no directories either: nothing needs them.
func (r *Repo) Symlinks(ctx context.Context, commit string) (links map[string]string, dirs map[string]bool, err error) {
	// Not --long: sizing every blob of a loose-object repository costs
	// more than the listing; only the links are sized, below. Streamed
	// and within r.Limits, as every listing (tree.go).
	blobOf := map[string]string{} // path → blob
	var ids []string              // each blob once
	seen := map[string]bool{}
	dirs = map[string]bool{}
	err = r.listTree(ctx, commit, func(e entry) error {
		switch e.mode {
		case "040000":
			dirs[e.name] = true
		case "120000":
			id := e.oid
			blobOf[e.name] = id
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, listingError(err, "listing files at %s", commit)
	}
	if len(ids) == 0 {
		return map[string]string{}, nil, nil
	}
	sizes, err := r.blobSizes(ctx, ids)
	if err != nil {
		return nil, nil, rmerr.Wrap(rmerr.GitRepository, err, "sizing the symlinks at %s", objectid.Short(commit))
	}
	ids = slices.DeleteFunc(ids, func(id string) bool { return sizes[id] > MaxSymlinkTarget })
	blobs, err := r.ReadBlobs(ctx, ids, MaxSymlinkTarget)
	if err != nil {
		return nil, nil, rmerr.Wrap(rmerr.GitRepository, err, "reading the symlinks at %s", objectid.Short(commit))
	}
	target := make(map[string]string, len(ids))
	for i, id := range ids {
		if !bytes.ContainsRune(blobs[i], 0) {
			target[id] = string(blobs[i])
		}
	}
	links = make(map[string]string, len(blobOf))
	for p, id := range blobOf {
		if t, ok := target[id]; ok {
			links[p] = t
		}
	}
	return links, dirs, nil
}

// blobSizes sizes the blobs ids without reading them (cat-file
// --batch-check).
func (r *Repo) blobSizes(ctx context.Context, ids []string) (map[string]int64, error) {
	out, err := r.catFile(ctx, "--batch-check", ids)
	if err != nil {
		return nil, err
	}
	sizes := make(map[string]int64, len(ids))
	// "<oid> SP <type> SP <size> LF", or "<oid> missing LF".
	for _, line := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[1] != "blob" {
			return nil, fmt.Errorf("blob %q is not in the repository", line)
		}
		n, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("blob %s: size %q", f[0], f[2])
		}
		sizes[f[0]] = n
	}
	return sizes, nil
}

// catFile runs one `git cat-file MODE` over the object ids.
func (r *Repo) catFile(ctx context.Context, mode string, ids []string) ([]byte, error) {
	var in bytes.Buffer
	for _, id := range ids {
		if !objectid.Valid(id) {
			return nil, fmt.Errorf("%q is not a blob id", id)
		}
		in.WriteString(id + "\n")
	}
	return Run(ctx, r.Dir, RunOptions{Stdin: &in}, "cat-file", mode)
}

// ReadBlobs reads the blobs ids with one git process (cat-file --batch): a
// process per blob costs more than the blob. Each must be a blob of at most
// max bytes.
func (r *Repo) ReadBlobs(ctx context.Context, ids []string, max int) ([][]byte, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	out, err := r.catFile(ctx, "--batch", ids)
	if err != nil {
		return nil, err
	}
	blobs := make([][]byte, len(ids))
	for i, id := range ids {
		// "<oid> SP <type> SP <size> LF <contents> LF", or "<oid> missing LF".
		head, rest, ok := bytes.Cut(out, []byte{'\n'})
		f := strings.Fields(string(head))
		if !ok || len(f) != 3 || f[0] != id || f[1] != "blob" {
			return nil, fmt.Errorf("blob %s is not in the repository (%q)", id, head)
		}
		n, err := strconv.Atoi(f[2])
		if err != nil || n < 0 || n > max || len(rest) < n+1 {
			return nil, fmt.Errorf("blob %s: size %s (at most %d bytes)", id, f[2], max)
		}
		blobs[i], out = rest[:n], rest[n+1:]
	}
	return blobs, nil
}

// ErrTooLarge is returned by ReadBlob when the object exceeds the cap.
var ErrTooLarge = errors.New("file too large")

// ReadBlob reads a blob object, refusing anything over max bytes.
func (r *Repo) ReadBlob(ctx context.Context, e Entry, max int64) ([]byte, error) {
	if e.Size > max {
		return nil, fmt.Errorf("%w: %d bytes (limit %d)", ErrTooLarge, e.Size, max)
	}
	b, ok := kept(r, r.blobs, e.Object)
	if !ok {
		out, err := r.run(ctx, nil, "cat-file", "blob", e.Object)
		if err != nil {
			return nil, err
		}
		b = out
		if len(b) <= maxKeptBlob && objectid.Valid(e.Object) {
			keep(r, &r.blobs, e.Object, bytes.Clone(b))
		}
	} else {
		b = bytes.Clone(b)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, max)
	}
	return b, nil
}

// ModeAt returns the tree-entry mode of path at commit ("100644",
// "040000", …), "" when commit has no such path. With ReadAt it is what
// pkg/discovery reads policy through (its Repository interface, satisfied
// structurally: plumbing does not import the domain).
func (r *Repo) ModeAt(ctx context.Context, commit, path string) (string, error) {
	e, err := r.Stat(ctx, commit, path)
	return e.Mode, err
}

// ReadAt reads the regular file path at commit, at most max bytes (more is
// an error, never a truncation).
func (r *Repo) ReadAt(ctx context.Context, commit, path string, max int64) ([]byte, error) {
	e, err := r.Stat(ctx, commit, path)
	if err != nil {
		return nil, err
	}
	if e.Kind != Blob && e.Kind != Executable {
		return nil, fmt.Errorf("%s at %s is a %s, not a regular file", path, objectid.Short(commit), e.Kind)
	}
	return r.ReadBlob(ctx, e, max)
}

// MergeBase returns the best common ancestor of a and b.
func (r *Repo) MergeBase(ctx context.Context, a, b string) (string, error) {
	out, err := r.run(ctx, nil, "merge-base", a, b)
	if err != nil {
		return "", rmerr.Wrap(rmerr.GitRepository, err, "finding the merge base of %s and %s", objectid.Short(a), objectid.Short(b)).
			WithHint("base and candidate need a common ancestor; fetch full history (fetch-depth: 0)")
	}
	return strings.TrimSpace(string(out)), nil
}

// Ignored reports whether path (relative to the work tree; a trailing '/'
// names a directory) is ignored by the work tree's ignore rules.
func (r *Repo) Ignored(ctx context.Context, path string) (bool, error) {
	_, err := r.run(ctx, nil, "check-ignore", "-q", "--no-index", "--", path)
	var exit *exec.ExitError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return false, nil
	}
	return false, rmerr.Wrap(rmerr.GitRepository, err, "checking whether %s is ignored", path)
}
