// Package checkout makes the fresh checkouts of spec/verification.md § 3
// (Freshness): every check run gets its own detached checkout of the exact
// commit, under runmill's state directory, destroyed right after that run.
//
// # What a checkout is
//
// A checkout is a real git repository, created without `git worktree add`:
//
//	<state>/checkouts/<session>/<commit12>-<n>/        the working tree (Checkout.Dir)
//	<state>/checkouts/<session>/<commit12>-<n>/.git/   its own git directory (Checkout.GitDir):
//	    HEAD                     the commit id: HEAD is detached at the exact commit
//	    config                   written by runmill: format settings only, no remote, no credentials
//	    objects/info/alternates  the repository's object directory, read in place (nothing is copied)
//	    packed-refs              a snapshot of the repository's refs, so `git describe` and
//	                             `git log origin/main..` behave as in the repository
//	    shallow                  a copy, when the repository is shallow
//	    index                    written by `git read-tree --reset -u`, which also writes the files
//
// Why not `git worktree add --detach`: it does the same checkout work but
// registers the checkout inside the repository's .git (so a crash leaves
// registrations to prune in the user's repository), runs the repository's
// post-checkout hook on the host, and makes the sandbox bind the whole common
// git directory to let git work in the checkout — including .git/config,
// where actions/checkout persists the job's token. Here the sandbox binds
// only the checkout and the object directories (ReadOnlyPaths), git inside
// sees runmill's own config, and nothing outside the state directory changes.
// The files themselves are written by git (`read-tree -u`, the same code path
// as `git checkout`, with parallel checkout workers for large trees), so
// attributes, eol conversion and filters apply exactly as in a normal
// checkout.
//
// # Use
//
//	m, err := checkout.NewManager(ctx, repoDir, stateDir)
//	defer m.Close(cleanupCtx)          // before the run's cleanup observation
//	removed, err := m.Sweep(ctx)       // leftovers of crashed runs, for the event log
//	c, err := m.Create(ctx, commit)
//	defer c.Remove()                   // also called explicitly right after the check
//	// sandbox: bind c.ReadOnlyPaths() read-only at the same paths, add GitEnv()
//
// # Lifetime
//
// Create makes a checkout; Remove destroys it and is safe to call twice and
// concurrently, from a defer, after a panic or a timeout. Remove renames the
// directory aside (atomically: from then on nothing can reach the checkout
// by its path) and deletes the files in the background with a bounded pool;
// Wait and Close block until every removal has finished and report any that
// failed. The engine calls Close before it records its cleanup observation.
//
// Each Manager owns a session directory, locked with flock(2) for its whole
// life. The lock dies with the process, however it dies, so Sweep (run at the
// next start) can tell a crashed session's leftovers from a concurrent live
// runmill's checkouts, removes the former and reports what it removed.
package checkout

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/runmill/verify/internal/bounded"
	"github.com/runmill/verify/internal/fsname"
	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/internal/mountinfo"
	"github.com/runmill/verify/pkg/harness"
	"github.com/runmill/verify/pkg/objectid"
	"github.com/runmill/verify/pkg/rmerr"
)

// Manager creates and destroys the checkouts of one repository within one
// runmill process. It is safe for concurrent use.
type Manager struct {
	repo       string   // the repository as given, absolute
	objectDirs []string // the repository's object directory and every alternate it names, recursively, symlinks resolved
	format     string   // object format: "sha1" or "sha256"
	refs       []byte   // packed-refs snapshot for every checkout
	shallow    []byte   // the repository's shallow file, nil when complete

	checkouts string   // <state>/checkouts
	session   string   // <state>/checkouts/<session>
	trash     string   // <session>/trash: checkouts being deleted
	lock      *os.File // flock held for the Manager's life

	checkoutWorkers   int  // git checkout.workers
	checkoutThreshold int  // git checkout.thresholdForParallelism
	umaskHidesFiles   bool // the process umask would hide the checkout from the sandbox user
	rm                *remover

	mu      sync.Mutex
	layered bool              // checkouts are overlay mounts over layers (overlay.go)
	layers  map[string]*layer // commit id → its layer, in layered mode
	commits map[string]string // revision → verified commit id
	live    map[*Checkout]struct{}
	seq     int
	closed  bool
	closeMu sync.Mutex

	// layersInRAM: <session>/layers is a tmpfs (overlay.go) with
	// tmpfsBytes and tmpfsInodes not yet reserved by a layer.
	layersInRAM             bool
	tmpfsBytes, tmpfsInodes int64

	// measurer measures every commit before its first checkout
	// (limits.go).
	measurer *git.Repo
}

// Checkout is one fresh, detached checkout of one commit.
type Checkout struct {
	Dir    string // the working tree, absolute
	GitDir string // its git directory, Dir/.git
	Commit string // the full object id HEAD is detached at
	// ObjectDirs are the object directories outside the checkout that git
	// reads through objects/info/alternates.
	ObjectDirs []string

	m       *Manager
	ovl     string // layered: the directory of its upper and work directories
	mounted bool   // layered: Dir is an overlay mount
	once    sync.Once
	err     error
}

// NewManager prepares checkouts of the repository at repoDir (a working tree
// or a bare repository) under stateDir/checkouts. stateDir must not lie
// inside the repository. The Manager takes a snapshot of the repository's
// refs; Close releases it.
func NewManager(ctx context.Context, repoDir, stateDir string) (*Manager, error) {
	repo, err := filepath.Abs(repoDir)
	if err != nil {
		return nil, rmerr.Wrap(rmerr.GitRepository, err, "resolving repository %s", repoDir)
	}
	out, err := git.Run(ctx, repo, git.RunOptions{}, "rev-parse", "--is-bare-repository", "--path-format=absolute",
		"--git-common-dir", "--git-path", "objects", "--git-path", "shallow", "--show-object-format")
	if err != nil {
		return nil, rmerr.Wrap(rmerr.GitRepository, err, "reading repository %s", repo).
			WithHint("--repo must name a git repository; git 2.31 or newer is required")
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != 5 {
		return nil, rmerr.New(rmerr.GitRepository, "reading repository %s: unexpected rev-parse output %q", repo, out)
	}
	bare, common, objects, shallowPath, format := lines[0] == "true", lines[1], lines[2], lines[3], lines[4]
	if format != "sha1" && format != "sha256" {
		return nil, rmerr.New(rmerr.GitRepository, "repository %s uses object format %q, which runmill does not know", repo, format)
	}
	top := common
	if !bare {
		out, err := git.Run(ctx, repo, git.RunOptions{}, "rev-parse", "--path-format=absolute", "--show-toplevel")
		if err != nil {
			return nil, rmerr.Wrap(rmerr.GitRepository, err, "reading repository %s", repo)
		}
		top = strings.TrimRight(string(out), "\n")
	}

	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return nil, rmerr.Wrap(rmerr.CheckoutCreate, err, "creating state directory %s", stateDir)
	}
	state, err := filepath.EvalSymlinks(stateDir)
	if err == nil {
		state, err = filepath.Abs(state)
	}
	if err != nil {
		return nil, rmerr.Wrap(rmerr.CheckoutCreate, err, "resolving state directory %s", stateDir)
	}
	for _, inside := range []string{top, common} {
		if real, err := filepath.EvalSymlinks(inside); err == nil && fsname.Within(state, real) {
			return nil, rmerr.New(rmerr.CheckoutCreate, "state directory %s lies inside the repository %s", state, real).
				WithHint("choose a state directory outside the repository (--out or RUNMILL_STATE_DIR)")
		}
	}

	objectDirs, err := alternates(objects)
	if err != nil {
		return nil, rmerr.Wrap(rmerr.GitRepository, err, "reading the object directories of %s", repo)
	}
	refs, err := git.Run(ctx, repo, git.RunOptions{}, "for-each-ref", "--format=%(objectname) %(refname)")
	if err != nil {
		return nil, rmerr.Wrap(rmerr.GitRepository, err, "listing the refs of %s", repo)
	}
	// 64 MiB is a million shallow commits.
	shallow, err := readGitFile(shallowPath, 64<<20)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, rmerr.Wrap(rmerr.GitRepository, err, "reading %s", shallowPath)
	}

	m := &Manager{
		repo: repo, objectDirs: objectDirs, format: format,
		refs: refs, shallow: shallow,
		checkouts:         filepath.Join(state, "checkouts"),
		checkoutWorkers:   max(2, runtime.GOMAXPROCS(0)),
		checkoutThreshold: parallelCheckoutThreshold,
		umaskHidesFiles:   umaskHidesFiles(),
		rm:                newRemover(max(2, runtime.GOMAXPROCS(0))),
		commits:           map[string]string{},
		layers:            map[string]*layer{},
		live:              map[*Checkout]struct{}{},
		measurer:          &git.Repo{Dir: repo},
	}
	if err := m.openSession(); err != nil {
		return nil, err
	}
	return m, nil
}

// Mounted reports whether the checkout is an overlay mount (layered mode):
// its removal then also ends a mount.
func (c *Checkout) Mounted() bool { return c.mounted }

// Dir is the Manager's own session directory: every checkout and layer it
// makes lies below it, and Close removes it.
func (m *Manager) Dir() string { return m.session }

// alternates returns objects and every object directory its
// info/alternates names, recursively, in git's order and without repeats.
func alternates(objects string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	var visit func(dir string, depth int) error
	visit = func(dir string, depth int) error {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			dir = real
		}
		if seen[dir] {
			return nil
		}
		if depth > 5 { // git's own limit
			return fmt.Errorf("alternates nested deeper than 5 at %s", dir)
		}
		seen[dir] = true
		out = append(out, dir)
		b, err := readGitFile(filepath.Join(dir, "info", "alternates"), 1<<20)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		} else if err != nil {
			return err
		}
		for _, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if strings.HasPrefix(line, `"`) { // git C-quotes unusual paths
				u, err := strconv.Unquote(line)
				if err != nil {
					return fmt.Errorf("unquoting alternate %s in %s: %w", line, dir, err)
				}
				line = u
			}
			if !filepath.IsAbs(line) {
				line = filepath.Join(dir, line)
			}
			if err := visit(filepath.Clean(line), depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return out, visit(objects, 0)
}

// commit resolves rev to a commit id once per Manager: the engine creates
// many checkouts of the same two commits.
func (m *Manager) commit(ctx context.Context, rev string) (string, error) {
	m.mu.Lock()
	id, ok := m.commits[rev]
	m.mu.Unlock()
	if ok {
		return id, nil
	}
	if !git.ValidRevision(rev) {
		return "", rmerr.New(rmerr.GitRevision, "revision %q is not a commit", rev)
	}
	out, err := git.Run(ctx, m.repo, git.RunOptions{}, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	id = strings.TrimSpace(string(out))
	if err != nil || !objectid.Valid(id) {
		if ctx.Err() != nil {
			return "", fmt.Errorf("resolving %s: %w", rev, ctx.Err())
		}
		return "", rmerr.New(rmerr.GitRevision, "revision %q is not a commit in %s", rev, m.repo).
			WithHint("fetch the commit into the repository (actions/checkout with fetch-depth: 0)")
	}
	m.mu.Lock()
	m.commits[rev] = id
	m.mu.Unlock()
	return id, nil
}

// Create makes a fresh checkout of commit (a commit id or any revision that
// names a commit). On failure nothing is left behind.
func (m *Manager) Create(ctx context.Context, commit string) (*Checkout, error) {
	return m.CreatePinned(ctx, commit, nil)
}

// CreatePinned makes a fresh checkout of commit with each of pins laid over
// it (pkg/harness: the base's version of a check's harness files, and the
// removal of those new in the commit). In
// layered mode the pins are one more lower layer above the commit's; the
// checkout is then as fresh and as read-only as any other. A commit over
// the Manager's limits is refused before anything is written (limits.go).
func (m *Manager) CreatePinned(ctx context.Context, commit string, pins []harness.Pin) (*Checkout, error) {
	id, err := m.commit(ctx, commit)
	if err != nil {
		return nil, err
	}
	size, err := m.measure(ctx, id)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, rmerr.New(rmerr.CheckoutCreate, "creating a checkout of %s: the manager is closed", id)
	}
	m.seq++
	name := fmt.Sprintf("%s-%d", objectid.Short(id), m.seq)
	dir := filepath.Join(m.session, name)
	c := &Checkout{Dir: dir, GitDir: filepath.Join(dir, ".git"), Commit: id, ObjectDirs: m.objectDirs, m: m}
	layered := m.layered
	if layered {
		c.ovl = filepath.Join(m.session, "ovl", name)
	}
	m.live[c] = struct{}{}
	m.mu.Unlock()

	populate := func(ctx context.Context, c *Checkout) error {
		if err := m.populate(ctx, c); err != nil {
			return err
		}
		return m.writePins(ctx, c.Dir, pins)
	}
	if layered {
		populate = func(ctx context.Context, c *Checkout) error { return m.mountLayered(ctx, c, size, pins) }
	}
	if err := populate(ctx, c); err != nil {
		if rerr := c.Remove(); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return nil, err
	}
	return c, nil
}

// populate writes the git directory and lets git check the commit out.
func (m *Manager) populate(ctx context.Context, c *Checkout) error {
	fail := func(err error, what string) error {
		return rmerr.Wrap(rmerr.CheckoutCreate, err, "creating checkout of %s: %s", c.Commit, what)
	}
	for _, d := range []string{c.Dir, c.GitDir, filepath.Join(c.GitDir, "objects"), filepath.Join(c.GitDir, "objects", "info"), filepath.Join(c.GitDir, "refs")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return fail(err, "making directories")
		}
		if err := m.readable(d, 0o755); err != nil {
			return fail(err, "making directories")
		}
	}
	config := "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
	if m.format != "sha1" {
		config = "[core]\n\trepositoryformatversion = 1\n\tfilemode = true\n\tbare = false\n[extensions]\n\tobjectformat = " + m.format + "\n"
	}
	files := []struct {
		name string
		data []byte
	}{
		{"HEAD", []byte(c.Commit + "\n")},
		{"config", []byte(config)},
		{"objects/info/alternates", []byte(m.objectDirs[0] + "\n")}, // the resolved path, as bound in the sandbox
		{"packed-refs", m.refs},
	}
	if m.shallow != nil {
		files = append(files, struct {
			name string
			data []byte
		}{"shallow", m.shallow})
	}
	for _, f := range files {
		p := filepath.Join(c.GitDir, f.name)
		if err := os.WriteFile(p, f.data, 0o644); err != nil {
			return fail(err, "writing .git/"+f.name)
		}
		if err := m.readable(p, 0o644); err != nil {
			return fail(err, "writing .git/"+f.name)
		}
	}
	if _, err := git.Run(ctx, c.Dir, git.RunOptions{Owned: true, Umask022: m.umaskHidesFiles},
		"-c", "checkout.workers="+strconv.Itoa(m.checkoutWorkers),
		"-c", "checkout.thresholdForParallelism="+strconv.Itoa(m.checkoutThreshold),
		"read-tree", "--reset", "-u", c.Commit); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("creating checkout of %s: %w", c.Commit, ctx.Err())
		}
		return fail(err, "git read-tree")
	}
	return nil
}

// parallelCheckoutThreshold is the number of files from which git writes
// the checkout with parallel workers (checkout.workers). Each worker is a
// process: measured here, two workers add about 35 ms of CPU plus about 25 µs
// per file of hand-off, and pay back in wall-clock time only when a core is
// idle and the tree is large (20 000 files: 2.5 s instead of 4.1 s under
// load). Below the threshold git checks out serially (1 000 files: 66 ms CPU
// instead of 102 ms, and no slower), which matters when the engine already
// runs checks in parallel. docs/benchmarks.md has the figures.
const parallelCheckoutThreshold = 2000

// readable gives p its mode despite a restrictive umask: the sandbox user
// owns none of the checkout and must still read all of it.
func (m *Manager) readable(p string, mode os.FileMode) error {
	if !m.umaskHidesFiles {
		return nil
	}
	return os.Chmod(p, mode)
}

// umaskHidesFiles reports whether the process umask takes read or search
// permission from group or others (umask 077, say), which would make the
// checkout unreadable to the sandbox's non-root user.
func umaskHidesFiles() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return true // unknown: be safe, it costs one shell per checkout
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Umask:"); ok {
			u, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32)
			return err != nil || u&0o055 != 0
		}
	}
	return true
}

// ReadOnlyPaths is the exact set of host paths the sandbox must bind
// read-only, each at the same path, for git to work inside the checkout:
// the checkout (its .git included) and the object directories its
// alternates name. Nothing else of the repository is needed or exposed.
func (c *Checkout) ReadOnlyPaths() []string {
	return append([]string{c.Dir}, c.ObjectDirs...)
}

// Remove destroys the checkout: when it returns nil, the checkout's path no
// longer exists and its files are being deleted by the Manager (Wait or Close
// for the end). It is idempotent and safe to call concurrently; every call
// returns the first call's result.
func (c *Checkout) Remove() error {
	c.once.Do(func() { c.err = c.m.remove(c) })
	return c.err
}

func (m *Manager) remove(c *Checkout) error {
	m.mu.Lock()
	delete(m.live, c)
	m.mu.Unlock()
	if c.mounted {
		if err := mountinfo.Unmount(c.Dir); err != nil {
			return rmerr.Wrap(rmerr.CheckoutRemove, err, "unmounting checkout %s", c.Dir).WithHint(removeHint)
		}
	}
	if c.ovl != "" {
		if err := os.Rename(c.ovl, filepath.Join(m.trash, "ovl-"+filepath.Base(c.ovl))); err == nil {
			m.rm.background(filepath.Join(m.trash, "ovl-"+filepath.Base(c.ovl)))
		} else if !errors.Is(err, os.ErrNotExist) {
			if err := m.rm.Tree(c.ovl); err != nil {
				return rmerr.Wrap(rmerr.CheckoutRemove, err, "removing checkout layer %s", c.ovl).WithHint(removeHint)
			}
		}
	}
	aside := filepath.Join(m.trash, filepath.Base(c.Dir))
	err := os.Rename(c.Dir, aside)
	switch {
	case err == nil:
		m.rm.background(aside)
		return nil
	case errors.Is(err, os.ErrNotExist):
		return nil // never created, or already swept
	}
	// Renaming failed (the trash is gone, or the name is taken): remove in
	// place, synchronously, so the checkout is gone when Remove returns.
	if err := m.rm.Tree(c.Dir); err != nil {
		return rmerr.Wrap(rmerr.CheckoutRemove, err, "removing checkout %s", c.Dir).
			WithHint(removeHint)
	}
	return nil
}

// Wait blocks until every removal started so far has finished and returns
// the failures (RM-CHECKOUT-002), once each.
func (m *Manager) Wait(ctx context.Context) error {
	return m.rm.wait(ctx)
}

// Close removes every checkout still alive, waits for all removals, deletes
// the session directory and releases its lock. It is idempotent; the Manager
// creates no checkout afterwards. ctx bounds only the wait: on SIGTERM or a
// timeout, call it with a context that outlives the run's (for example
// context.WithoutCancel plus a deadline). Whatever Close cannot finish, the
// next start's Sweep removes.
func (m *Manager) Close(ctx context.Context) error {
	m.closeMu.Lock()
	defer m.closeMu.Unlock()
	m.mu.Lock()
	if m.closed && m.lock == nil {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	live := make([]*Checkout, 0, len(m.live))
	for c := range m.live {
		live = append(live, c)
	}
	m.mu.Unlock()
	var errs []error
	for _, c := range live {
		if err := c.Remove(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := m.Wait(ctx); err != nil {
		return errors.Join(append(errs, err)...) // keep the session: Sweep retries after the crash or exit
	}
	// Never delete through a mount: a checkout whose Remove failed to
	// unmount would otherwise take a layer's files with it.
	if _, err := mountinfo.UnmountUnder(m.session); err != nil {
		return errors.Join(append(errs, rmerr.Wrap(rmerr.CheckoutRemove, err, "unmounting checkouts under %s", m.session).WithHint(removeHint))...)
	}
	if err := m.rm.Tree(m.session); err != nil {
		errs = append(errs, rmerr.Wrap(rmerr.CheckoutRemove, err, "removing session %s", m.session).
			WithHint(removeHint))
	}
	if len(errs) == 0 {
		m.releaseSession()
		m.lock = nil
	}
	return errors.Join(errs...)
}

// readGitFile reads a file of the repository's git directory as git does,
// through symlinks, but never waits on a FIFO or device in its place
// (bounded.ReadFile): a repository must not be able to hold the run in
// open(2).
func readGitFile(path string, max int64) ([]byte, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	return bounded.ReadFile(real, max)
}
