package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"

	"github.com/runmill/verify/pkg/harness"
	"github.com/runmill/verify/pkg/objectid"
	"github.com/runmill/verify/pkg/rmerr"
)

// Listing a tree (issue 23)
//
// A commit is small and its tree can be huge: 136 KB of objects name
// 1 000 000 paths (one blob, a directory of 1 000 references to it, 1 000
// references to that directory), and 552 KB of objects name 3 GB of file
// content. Every listing here is therefore streamed — git's output is
// parsed record by record as it arrives, never held whole — and bounded by
// Limits: a listing that passes a limit stops git at once (its process
// group is killed) and is refused with the limit's code, the measured
// value and the operator setting that raises it.

// Default limits of one commit's tree. Without them (issue 23, measured
// against runmill before these bounds; docs/benchmarks.md § Bounds on
// repository content) a commit of 1 000 000 paths took 72 s and about 4 GB
// to verify, and one of 3 GB OOM-killed the gate under a 2 GiB memory limit
// in 1.1 s; refused, each takes about a second and a few megabytes. A
// repository the size of the Linux kernel (about 90 000 files, 1.5 GB of
// them) fits with room; a larger monorepo raises them in the operator
// policy (budgets.checkout_entries, budgets.checkout_bytes; docs/policy.md).
const (
	// DefaultEntries bounds a tree's entries: files, symlinks, submodules
	// and, where a listing sees them, directories.
	DefaultEntries int64 = 500_000
	// DefaultBytes bounds the bytes of a tree's files and symlinks, as git
	// stores them (checkout may convert line endings or encodings).
	DefaultBytes int64 = 2 << 30
	// MaxPath is the longest path a listing admits: Linux's PATH_MAX, so a
	// longer one could not be checked out anyway.
	MaxPath = 4096
	// MeanPathBytes bounds a listing's paths together, at this many bytes
	// per admitted entry: what a listing holds in memory stays in
	// proportion to the entry limit (real paths average under 100 bytes).
	MeanPathBytes int64 = 512
)

// Limits bound what a listing of one commit's tree may hold. The zero value
// of a field is its default.
type Limits struct {
	Entries int64 // files, symlinks, submodules, directories (DefaultEntries)
	Bytes   int64 // the bytes of files and symlinks (DefaultBytes)
}

func (l Limits) entries() int64 { return cmpOr(l.Entries, DefaultEntries) }
func (l Limits) bytes() int64   { return cmpOr(l.Bytes, DefaultBytes) }

func cmpOr(v, def int64) int64 {
	if v > 0 {
		return v
	}
	return def
}

// TreeSize is what checking a commit out would write, measured from its
// tree's objects alone.
type TreeSize struct {
	Entries int64 // files, symlinks and submodules
	Dirs    int64 // directories (the root not counted); they count against Limits.Entries too
	Bytes   int64 // the bytes of files and symlinks
	// Allocated is what a filesystem of 4 KiB blocks allocates for the
	// files' contents (each file rounded up to whole blocks) and git's
	// index of them (about 64 bytes and the path per entry): on a tmpfs,
	// the memory the checkout takes.
	Allocated int64
}

// listing counts one listing against its limits.
type listing struct {
	what    string // "the tree of <commit>", for messages
	limits  Limits
	entries int64 // admitted entries
	names   int64 // their paths' bytes
	// scale multiplies the entry limit: a change lists the paths of two
	// trees.
	scale int64
	dirs  string // ", directories" when the listing counts them
}

// admit counts one entry named path, refusing it past a limit.
func (l *listing) admit(path string) error {
	max := l.limits.entries() * l.scale
	l.entries++
	l.names += int64(len(path))
	switch {
	case l.entries > max:
		setting := "budgets.checkout_entries"
		if l.scale > 1 {
			setting += fmt.Sprintf(" (a change may touch %d times as many paths)", l.scale)
		}
		return rmerr.New(rmerr.LimitTreeEntries, "%s: more than %d entries (files, symlinks, submodules%s); listing stopped there", l.what, max, l.dirs).
			WithHint("a change this large cannot be verified; if the repository really has this many files, raise %s in the operator policy (docs/policy.md)", setting)
	case len(path) > MaxPath:
		return rmerr.New(rmerr.LimitTreePaths, "%s: the path %q… is %d bytes long, more than the %d a Linux path may have", l.what, path[:64], len(path), MaxPath).
			WithHint("rename the file: no checkout can hold it")
	case l.names > max*MeanPathBytes:
		return rmerr.New(rmerr.LimitTreePaths, "%s: its paths are more than %d bytes together (%d bytes per entry allowed, %d entries listed)", l.what, max*MeanPathBytes, MeanPathBytes, l.entries).
			WithHint("shorten the paths; the allowance grows with budgets.checkout_entries in the operator policy (docs/policy.md)")
	}
	return nil
}

// answer is what the Repo was told once about one key.
type answer[V any] struct {
	once sync.Once
	v    V
	err  error
}

// askOnce returns ask's answer for key, asking it once per Repo: the answer
// is kept in *m, a refusal too (a commit's tree and the limits do not
// change); a cancelled ask is not kept.
func askOnce[V any](ctx context.Context, r *Repo, m *map[string]*answer[V], key string, ask func() (V, error)) (V, error) {
	r.mu.Lock()
	if *m == nil {
		*m = map[string]*answer[V]{}
	}
	a, ok := (*m)[key]
	if !ok {
		a = &answer[V]{}
		(*m)[key] = a
	}
	r.mu.Unlock()
	a.once.Do(func() {
		a.v, a.err = ask()
		if a.err != nil && ctx.Err() != nil {
			r.mu.Lock()
			delete(*m, key)
			r.mu.Unlock()
		}
	})
	return a.v, a.err
}

// TreeSize measures what checking commit out would write, refusing a tree
// over r.Limits (RM-LIMIT-002, -003, -004) as soon as the measure passes a
// limit. Every user of the Repo measures a commit once (askOnce).
func (r *Repo) TreeSize(ctx context.Context, commit string) (TreeSize, error) {
	return askOnce(ctx, r, &r.sizes, commit, func() (TreeSize, error) { return r.treeSize(ctx, commit) })
}

// treeSize lists the tree streamed (git ls-tree -r -t), then asks each
// distinct blob's size once (git cat-file --batch-check), not once per
// entry: `ls-tree -l` looks every entry's object up, which took 56 s for
// 550 000 references to one loose blob (docs/benchmarks.md).
func (r *Repo) treeSize(ctx context.Context, commit string) (TreeSize, error) {
	var s TreeSize
	what := "the tree of " + objectid.Short(commit)
	uses := map[string]int64{} // blob id → entries naming it
	// A directory is an entry to write too: an empty tree object costs its
	// name and nothing else.
	err := r.listTree(ctx, commit, func(e entry) error {
		switch e.typ {
		case "tree":
			s.Dirs++
		case "blob":
			uses[e.oid]++
			fallthrough
		default: // a submodule: nothing is checked out but its directory
			s.Entries++
			s.Allocated += 64 + int64(len(e.name))
		}
		return nil
	})
	if err != nil {
		return TreeSize{}, listingError(err, "listing the tree of %s", commit)
	}
	var in bytes.Buffer
	for id := range uses {
		in.WriteString(id + "\n")
	}
	max := r.Limits.bytes()
	// "<object> SP <type> SP <size>", or "<object> SP missing"
	err = r.records(ctx, what, recordOptions{sep: '\n', stdin: &in}, func(rec []byte) error {
		id, rest, _ := bytes.Cut(rec, []byte{' '})
		typ, sz, _ := bytes.Cut(rest, []byte{' '})
		if string(typ) != "blob" {
			return fmt.Errorf("the tree names %q, which is not a blob in the repository", rec)
		}
		size, err := strconv.ParseInt(string(sz), 10, 64)
		n := uses[string(id)]
		if err != nil || size < 0 || n == 0 {
			return fmt.Errorf("unexpected cat-file output %q", rec)
		}
		if size > 0 && n > (max-s.Bytes)/size {
			return rmerr.New(rmerr.LimitTreeBytes, "%s: its files hold more than %d bytes (a blob of %d bytes named %d times, after %d bytes of other files); measuring stopped there", what, max, size, n, s.Bytes).
				WithHint("a change this large cannot be verified; if the repository's files really hold this much, raise budgets.checkout_bytes in the operator policy (docs/policy.md)")
		}
		s.Bytes += size * n
		s.Allocated += ((size + 4095) &^ 4095) * n
		return nil
	}, "cat-file", "--batch-check")
	if err != nil {
		return TreeSize{}, listingError(err, "measuring the files of %s", commit)
	}
	return s, nil
}

// Files lists the files and symlinks of commit's tree with their modes and
// blob ids (listTree, within r.Limits): the input of pkg/harness.
func (r *Repo) Files(ctx context.Context, commit string) (harness.Tree, error) {
	t := harness.Tree{}
	err := r.listTree(ctx, commit, func(e entry) error {
		if e.typ != "blob" {
			return nil // directories, and submodules: not files of this repository
		}
		t[e.name] = harness.Entry{Mode: e.mode, Blob: e.oid}
		return nil
	})
	if err != nil {
		return nil, listingError(err, "listing files at %s", commit)
	}
	return t, nil
}

// TrackedFiles lists the paths tracked at commit, files, symlinks and
// submodules (listTree, within r.Limits).
func (r *Repo) TrackedFiles(ctx context.Context, commit string) ([]string, error) {
	var files []string
	err := r.listTree(ctx, commit, func(e entry) error {
		if e.typ != "tree" {
			files = append(files, e.name)
		}
		return nil
	})
	if err != nil {
		return nil, listingError(err, "listing files at %s", commit)
	}
	return files, nil
}

// ChangedPaths lists the paths the candidate changes relative to its merge
// base with base (git diff BASE...CANDIDATE, streamed). Rename detection is
// off so a rename counts under both its old and its new name. A change
// touches at most every path of both trees, so more than twice r.Limits'
// entries is refused.
func (r *Repo) ChangedPaths(ctx context.Context, base, candidate string) ([]string, error) {
	key := base + "..." + candidate
	if p, ok := kept(r, r.changed, key); ok {
		return slices.Clone(p), nil
	}
	paths, err := r.changedPaths(ctx, base, candidate)
	if err == nil && objectid.Valid(base) && objectid.Valid(candidate) {
		keep(r, &r.changed, key, slices.Clone(paths))
	}
	return paths, err
}

func (r *Repo) changedPaths(ctx context.Context, base, candidate string) ([]string, error) {
	var paths []string
	l := &listing{what: "the change " + objectid.Short(base) + "..." + objectid.Short(candidate), limits: r.Limits, scale: 2}
	err := r.records(ctx, l.what, recordOptions{}, func(rec []byte) error {
		p := string(rec)
		if err := l.admit(p); err != nil {
			return err
		}
		paths = append(paths, p)
		return nil
	}, "diff", "--name-only", "-z", "--no-renames", "--no-ext-diff", "--no-textconv", base+"..."+candidate, "--")
	if err != nil {
		if rmerr.CodeOf(err) != "" || ctx.Err() != nil {
			return nil, err
		}
		return nil, rmerr.Wrap(rmerr.GitRepository, err, "listing changed paths %s...%s", objectid.Short(base), objectid.Short(candidate)).
			WithHint("base and candidate need a common ancestor; fetch full history (fetch-depth: 0)")
	}
	return paths, nil
}

// listTree hands fn each entry of commit's tree, directories included
// (ls-tree -r -t), the listing bounded by r.Limits. A commit named by its
// full object id is listed by one git process per Repo and its entries kept
// (an id names the same tree forever; a ref can move), so TreeSize, Files,
// TrackedFiles and Symlinks of one commit cost one listing, not four. A
// refusal is kept with the entries admitted before it; a cancelled listing
// is not kept.
func (r *Repo) listTree(ctx context.Context, commit string, fn func(entry) error) error {
	if !objectid.Valid(commit) {
		return r.streamTree(ctx, commit, fn)
	}
	entries, err := askOnce(ctx, r, &r.trees, commit, func() ([]entry, error) {
		var entries []entry
		err := r.streamTree(ctx, commit, func(e entry) error {
			entries = append(entries, e)
			return nil
		})
		return entries, err
	})
	for _, e := range entries {
		if err := fn(e); err != nil {
			return err
		}
	}
	return err
}

// streamTree runs git ls-tree -r -t over commit and hands fn each entry as
// it arrives, each first admitted against r.Limits.
func (r *Repo) streamTree(ctx context.Context, commit string, fn func(entry) error) error {
	l := &listing{what: "the tree of " + objectid.Short(commit), limits: r.Limits, scale: 1, dirs: ", directories"}
	return r.records(ctx, l.what, recordOptions{}, func(rec []byte) error {
		e, ok := parseEntry(rec)
		if !ok {
			return fmt.Errorf("unexpected ls-tree output %q", rec)
		}
		if err := l.admit(e.name); err != nil {
			return err
		}
		return fn(e)
	}, "ls-tree", "-r", "-z", "--full-tree", "-t", commit)
}

// entry is one record of git ls-tree -z without -l:
// "<mode> SP <type> SP <object> TAB <path>".
type entry struct{ mode, typ, oid, name string }

func parseEntry(rec []byte) (entry, bool) {
	meta, name, ok1 := bytes.Cut(rec, []byte{'\t'})
	mode, rest, ok2 := bytes.Cut(meta, []byte{' '})
	typ, oid, ok3 := bytes.Cut(rest, []byte{' '})
	return entry{string(mode), string(typ), string(oid), string(name)}, ok1 && ok2 && ok3 && len(oid) > 0
}

// listingError keeps a limit's refusal and a cancellation as they are and
// makes anything else a git failure.
func listingError(err error, format string, commit string) error {
	if rmerr.CodeOf(err) != "" || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return rmerr.Wrap(rmerr.GitRepository, err, format, objectid.Short(commit))
}

// maxRecord bounds one record of a listing: a path of MaxPath bytes and
// its metadata. A longer record is refused before it is held.
const maxRecord = MaxPath + 256

// recordOptions: how git's output is split, and its input.
type recordOptions struct {
	sep   byte      // the byte ending each record (NUL when zero)
	stdin io.Reader // git's input (none when nil)
}

// records runs git in the repository and hands fn each record of its
// output as it arrives. fn's error, or a record longer than maxRecord,
// stops git at once (its process group is killed) and is returned; so is
// ctx's end. what names the listing in messages.
func (r *Repo) records(ctx context.Context, what string, o recordOptions, fn func(rec []byte) error, args ...string) error {
	run, stop := context.WithCancel(ctx)
	defer stop()
	w := &recordWriter{sep: o.sep, fn: fn, stop: stop, long: func() error {
		return rmerr.New(rmerr.LimitTreePaths, "%s: a path longer than the %d bytes a Linux path may have", what, MaxPath).
			WithHint("rename the file: no checkout can hold it")
	}}
	_, err := Run(run, r.Dir, RunOptions{Stdin: o.stdin, Stdout: w}, args...)
	switch {
	case w.err != nil:
		return w.err
	case err != nil && ctx.Err() != nil:
		return fmt.Errorf("%s: %w", what, ctx.Err())
	case err != nil:
		return err
	case len(w.partial) > 0:
		return fmt.Errorf("%s: git's output ends inside a record", what)
	}
	return nil
}

// recordWriter splits what git writes into records ending in sep.
type recordWriter struct {
	sep     byte
	fn      func([]byte) error
	stop    func()
	long    func() error // the refusal of a record over maxRecord
	partial []byte
	err     error
}

func (w *recordWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, w.sep)
		if i < 0 {
			if len(w.partial)+len(p) > maxRecord {
				return 0, w.fail(w.long())
			}
			w.partial = append(w.partial, p...)
			break
		}
		rec := p[:i]
		if len(w.partial) > 0 {
			if len(w.partial)+i > maxRecord {
				return 0, w.fail(w.long())
			}
			rec = append(w.partial, rec...)
			w.partial = w.partial[:0]
		} else if i > maxRecord {
			return 0, w.fail(w.long())
		}
		if err := w.fn(rec); err != nil {
			return 0, w.fail(err)
		}
		p = p[i+1:]
	}
	return n, nil
}

func (w *recordWriter) fail(err error) error {
	w.err = err
	w.stop()
	return err
}
