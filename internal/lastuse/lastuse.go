// Package lastuse keeps what runmill keeps under its state directory by
// last use: a process holds each directory it uses (a shared flock(2) on the
// directory itself, released by the kernel however the process ends), a
// cache entry's use is recorded as its directory's modification time, and
// pruning removes the entries unused for longer than a bound — then the
// least recently used beyond a size bound — never one a live process holds.
//
// Why the directory's mtime is the stamp: atime is unreliable (relatime
// updates it at most daily, noatime never), and a stamp file inside an
// entry would sit beside content that is fingerprinted. Setting the mtime
// is one syscall per use; otherwise a directory's mtime changes only when a
// name is added or removed in it, which for a cache entry is its making.
package lastuse

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/runmill/verify/internal/fsname"
	"github.com/runmill/verify/internal/rmtree"
	"github.com/runmill/verify/pkg/printable"
)

// Hold marks the directory dir as in use for as long as the returned file
// stays open: Exclusive fails meanwhile, and Prune and Remove leave it
// alone. A missing directory is an fs.ErrNotExist error — also one that a
// pruner took away while this waited for the lock (the pruner holds the
// exclusive lock while it does, so a holder never keeps a directory that
// is going). The wait is for one rename at most (remove1 lets go once the
// entry is aside), so it needs no cancellation.
func Hold(dir string) (*os.File, error) {
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
		f.Close()
		return nil, err
	}
	if !sameFile(f, dir) {
		f.Close()
		return nil, &fs.PathError{Op: "hold", Path: dir, Err: fs.ErrNotExist}
	}
	return f, nil
}

// sameFile reports whether the open f is still what path names.
func sameFile(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Lstat(path)
	return err == nil && os.SameFile(a, b)
}

// Exclusive holds dir exclusively if no one holds it (Hold), without
// waiting: ok is false when someone does. A Hold meanwhile waits until
// release.
func Exclusive(dir string) (release func(), ok bool) {
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	return func() { f.Close() }, true
}

// Set is the directories one user (a run, an import) holds; the zero Set
// is ready. Safe for concurrent use.
type Set struct {
	mu   sync.Mutex
	held map[string]*os.File
}

// Use holds dir until Close and records now as its last use. A missing dir
// is an fs.ErrNotExist error: the caller makes it afresh. A stamp that
// cannot be set is not an error: the entry only looks older than it is.
func (s *Set) Use(dir string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.held[dir]
	if f == nil || !sameFile(f, dir) {
		// Not held yet, or held before it was replaced (a damaged entry
		// made again at the same path).
		nf, err := Hold(dir)
		if err != nil {
			return err
		}
		if f != nil {
			f.Close()
		}
		if s.held == nil {
			s.held = map[string]*os.File{}
		}
		s.held[dir] = nf
	}
	now := time.Now()
	_ = os.Chtimes(dir, now, now)
	return nil
}

// Close releases every directory the Set holds. It is safe on a nil Set
// and when called twice.
func (s *Set) Close() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for dir, f := range s.held {
		f.Close()
		delete(s.held, dir)
	}
}

// Root is one directory of entries: every name in it is an entry (a
// directory, or a file), except those Keep names.
type Root struct {
	Dir string
	// Keep, when set, names what in Dir is not an entry and is never
	// pruned (a memo file).
	Keep func(name string) bool
}

// Limits bound the entries of a set of roots.
type Limits struct {
	// UnusedFor: an entry not used for longer goes.
	UnusedFor time.Duration
	// MaxBytes bounds the disk the entries use together (each inode
	// counted once, in the most recently used entry that links it); the
	// least recently used go first until the rest fit. 0: no size bound.
	MaxBytes int64
	// MinAge: the size bound never removes an entry used more recently
	// (one just made for a run that has not yet held it).
	MinAge time.Duration
}

// Removed is one entry pruning took away.
type Removed struct {
	Path    string
	LastUse time.Time
	Bytes   int64  // the disk it used: beyond the size bound, what no kept entry links; by age, its whole tree
	Reason  string // why: unused for longer than the bound, or beyond the size bound
}

func (r Removed) String() string {
	return fmt.Sprintf("%s (%s, last used %s, %s)", r.Path, printable.Bytes(r.Bytes), r.LastUse.UTC().Format(time.RFC3339), r.Reason)
}

// Usage is what the entries of a set of roots use, after pruning.
type Usage struct {
	Entries int
	Bytes   int64
}

type candidate struct {
	path    string
	lastUse time.Time
	dir     bool
	bytes   int64
}

// Prune removes, from the entries of roots, those unused for longer than
// l.UnusedFor, then — oldest use first — those beyond l.MaxBytes used
// longer ago than l.MinAge; never one a live process holds (Hold), nor one
// used while it was being judged. It returns what it removed, oldest use
// first, and what the kept entries use. A failed removal is reported and
// the rest go on. A missing root holds nothing. The age rule needs only a
// listing; measuring for the size bound walks every kept entry (an lstat
// per file). A cancelled ctx stops the walk between two files and the
// removals between two entries.
func Prune(ctx context.Context, roots []Root, l Limits, now time.Time) ([]Removed, Usage, error) {
	var all []*candidate
	var errs []error
	for _, r := range roots {
		entries, err := os.ReadDir(r.Dir)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		for _, e := range entries {
			if r.Keep != nil && r.Keep(e.Name()) {
				continue
			}
			p := filepath.Join(r.Dir, e.Name())
			st, err := os.Lstat(p)
			if err != nil {
				continue // gone meanwhile
			}
			all = append(all, &candidate{path: p, lastUse: st.ModTime(), dir: st.IsDir()})
		}
	}
	slices.SortFunc(all, func(a, b *candidate) int { // newest first
		if c := b.lastUse.Compare(a.lastUse); c != 0 {
			return c
		}
		return strings.Compare(a.path, b.path)
	})
	var removed []Removed
	remove := func(c *candidate, reason string, stillDue func(time.Time) bool) bool {
		if ctx.Err() != nil {
			return false
		}
		ok, err := remove1(ctx, c.path, c.dir, stillDue)
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			removed = append(removed, Removed{Path: c.path, LastUse: c.lastUse, Bytes: c.bytes, Reason: reason})
		}
		return ok
	}
	// The age rule first: it needs no measuring.
	var kept []*candidate
	for i := len(all) - 1; i >= 0; i-- { // oldest first
		c := all[i]
		if Leftover(filepath.Base(c.path)) {
			// What a cancelled removal left: no one can hold it any more.
			c.bytes, _ = diskUse(ctx, c.path, map[[2]uint64]bool{})
			if remove(c, "left by a removal that was stopped", func(time.Time) bool { return true }) {
				continue
			}
		} else if now.Sub(c.lastUse) > l.UnusedFor {
			// Its own size, for the record: what it shares with a kept
			// entry is counted too.
			c.bytes, _ = diskUse(ctx, c.path, map[[2]uint64]bool{})
			if remove(c, fmt.Sprintf("unused for more than %s", printable.Days(l.UnusedFor)), func(t time.Time) bool { return now.Sub(t) > l.UnusedFor }) {
				continue
			}
		}
		kept = append(kept, c)
	}
	slices.Reverse(kept) // newest first again
	// Newest first: an inode several entries link is charged to the most
	// recently used, so removing the least recently used frees exactly
	// what it was charged.
	seen := map[[2]uint64]bool{}
	var total int64
	for _, c := range kept {
		c.bytes, _ = diskUse(ctx, c.path, seen) // what cannot be read is not counted
		total += c.bytes
	}
	if err := ctx.Err(); err != nil {
		return removed, Usage{}, errors.Join(append(errs, err)...)
	}
	n := len(kept)
	for i := len(kept) - 1; i >= 0 && l.MaxBytes > 0 && total > l.MaxBytes; i-- {
		c := kept[i]
		if now.Sub(c.lastUse) <= l.MinAge {
			continue
		}
		if remove(c, fmt.Sprintf("the least recently used beyond the caches' bound of %s", printable.Bytes(l.MaxBytes)), func(t time.Time) bool { return now.Sub(t) > l.MinAge }) {
			total -= c.bytes
			n--
		}
	}
	slices.SortFunc(removed, func(a, b Removed) int { return a.LastUse.Compare(b.LastUse) })
	return removed, Usage{Entries: n, Bytes: total}, errors.Join(append(errs, ctx.Err())...)
}

// Remove removes path (a directory tree, or a file) unless a live process
// holds it (Hold) or due, given its modification time, no longer lets it
// go (it was used since it was judged). It reports whether it removed it.
// A ctx done meanwhile stops the removal between two files: what is left
// is renamed aside (Leftover) and the next pruning finishes it.
func Remove(ctx context.Context, path string, due func(modified time.Time) bool) (bool, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return false, nil
	}
	return remove1(ctx, path, st.IsDir(), due)
}

// asidePrefix starts the name a directory being removed is renamed to.
const asidePrefix = ".pruning-"

// Leftover reports whether name (in a pruned directory) is what a removal
// stopped midway left: a pruner removes it whatever its age — no holder
// can hold it (Hold checks the name still names what it opened).
func Leftover(name string) bool { return strings.HasPrefix(name, asidePrefix) }

// remove1 is Remove of what was listed as a directory or not. A directory
// is locked exclusively, checked again and renamed out of the way; then the
// lock goes (a process that waited for it finds the name no longer names
// what it opened: fs.ErrNotExist) and the tree is removed. Unlocking
// before the removal bounds a holder's wait to a rename, not the unlinking
// of a large tree (a run waiting there would not obey SIGTERM); a second
// pruner that takes up the leftover meanwhile only unlinks the same files.
func remove1(ctx context.Context, path string, dir bool, due func(time.Time) bool) (bool, error) {
	if !dir {
		st, err := os.Lstat(path)
		if err != nil || st.IsDir() || !due(st.ModTime()) {
			return false, nil
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, err
		}
		return true, nil
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return false, nil // gone meanwhile, or not what was listed
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return false, nil // in use
	}
	st, err := f.Stat()
	if err != nil || !sameFile(f, path) || !due(st.ModTime()) {
		return false, nil
	}
	aside := path
	if !Leftover(filepath.Base(path)) {
		aside = filepath.Join(filepath.Dir(path), asidePrefix+fsname.Random(8))
		if err := os.Rename(path, aside); err != nil {
			return false, fmt.Errorf("pruning %s: %w", path, err)
		}
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	if err := remover.TreeContext(ctx, aside); err != nil {
		if ctx.Err() != nil {
			return true, ctx.Err()
		}
		return true, fmt.Errorf("pruning %s: %w (what is left is %s)", path, err, aside)
	}
	return true, nil
}

var remover = rmtree.New(2)

// DiskUse is the disk (allocated blocks) of the inodes under p, a file or
// a directory, not in seen, which it adds to: a tree of hard links into a
// store already counted costs only its directories. A missing p uses
// nothing; what cannot be read is not counted and is the error.
func DiskUse(p string, seen map[[2]uint64]bool) (int64, error) {
	return diskUse(context.Background(), p, seen)
}

func diskUse(ctx context.Context, p string, seen map[[2]uint64]bool) (int64, error) {
	var n int64
	var errs []error
	filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if ctx.Err() != nil {
			return filepath.SkipAll
		}
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			return nil
		}
		var st syscall.Stat_t
		if syscall.Lstat(path, &st) != nil {
			return nil // gone meanwhile
		}
		key := [2]uint64{uint64(st.Dev), st.Ino}
		if seen[key] {
			return nil
		}
		seen[key] = true
		n += st.Blocks * 512
		return nil
	})
	return n, errors.Join(errs...)
}
