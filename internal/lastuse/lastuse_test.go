package lastuse_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/runmill/verify/internal/lastuse"
)

const day = 24 * time.Hour

// entry makes root/name holding one file of size bytes, last used age ago.
func entry(t *testing.T, root, name string, size int, age time.Duration) string {
	t.Helper()
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(filepath.Join(dir, "tree"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tree", "blob"), make([]byte, size), 0o444); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(dir, "tree"), 0o555) // read-only, as prepared dependencies are
	age1(t, dir, age)
	return dir
}

func age1(t *testing.T, p string, age time.Duration) {
	t.Helper()
	mt := time.Now().Add(-age)
	if err := os.Chtimes(p, mt, mt); err != nil {
		t.Fatal(err)
	}
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

func paths(rs []lastuse.Removed) []string {
	var out []string
	for _, r := range rs {
		out = append(out, filepath.Base(r.Path))
	}
	return out
}

// TestPruneByAge: what no one used for longer than the bound goes, oldest
// first — directories and files alike; a recent one, a held one and a kept
// name stay.
func TestPruneByAge(t *testing.T) {
	root := t.TempDir()
	entry(t, root, "old", 10, 20*day)
	entry(t, root, "older", 10, 30*day)
	entry(t, root, "recent", 10, day)
	held := entry(t, root, "held", 10, 40*day)
	for _, f := range []string{"memo.json", "stray"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		age1(t, filepath.Join(root, f), 50*day)
	}
	h, err := lastuse.Hold(held) // a live run's
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	roots := []lastuse.Root{{Dir: root, Keep: func(n string) bool { return n == "memo.json" }}, {Dir: filepath.Join(root, "absent")}}
	removed, usage, err := lastuse.Prune(context.Background(), roots, lastuse.Limits{UnusedFor: 14 * day}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := paths(removed), []string{"stray", "older", "old"}; !slices.Equal(got, want) {
		t.Errorf("removed %v, want %v (oldest use first)", got, want)
	}
	for name, want := range map[string]bool{"old": false, "older": false, "stray": false, "recent": true, "held": true, "memo.json": true} {
		if exists(filepath.Join(root, name)) != want {
			t.Errorf("%s exists = %v, want %v", name, !want, want)
		}
	}
	if usage.Entries != 2 || usage.Bytes <= 0 {
		t.Errorf("usage %+v, want the 2 kept entries and their bytes", usage)
	}
	for _, r := range removed {
		if !strings.Contains(r.Reason, "unused for more than 14 days") || r.LastUse.IsZero() {
			t.Errorf("removed %+v: want its last use and the reason", r)
		}
	}
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".pruning-") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
	// Released, the held entry goes too.
	h.Close()
	if removed, _, _ := lastuse.Prune(context.Background(), roots, lastuse.Limits{UnusedFor: 14 * day}, time.Now()); !slices.Equal(paths(removed), []string{"held"}) {
		t.Errorf("after release removed %v, want [held]", paths(removed))
	}
}

// TestPruneBySize: beyond the size bound the least recently used go until
// the rest fit, never one used within MinAge; an inode two entries link is
// charged to the more recently used, so the older one frees only its own.
func TestPruneBySize(t *testing.T) {
	root := t.TempDir()
	e1 := entry(t, root, "e1", 64<<10, 3*time.Hour)
	entry(t, root, "e2", 64<<10, 2*time.Hour)
	e3 := entry(t, root, "e3", 64<<10, 10*time.Minute)
	// A large file both e1 and e3 hold (a shared object).
	os.Chmod(filepath.Join(e1, "tree"), 0o755)
	os.Chmod(filepath.Join(e3, "tree"), 0o755)
	if err := os.WriteFile(filepath.Join(e3, "tree", "shared"), make([]byte, 256<<10), 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(e3, "tree", "shared"), filepath.Join(e1, "tree", "shared")); err != nil {
		t.Fatal(err)
	}
	age1(t, e1, 3*time.Hour)
	age1(t, e3, 10*time.Minute)
	size := func(p string) int64 {
		n, err := lastuse.DiskUse(p, map[[2]uint64]bool{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	shared := size(filepath.Join(e3, "tree", "shared"))
	e1own := size(e1) - shared
	roots := []lastuse.Root{{Dir: root}}
	total := e1own + size(filepath.Join(root, "e2")) + size(e3)
	limits := lastuse.Limits{UnusedFor: 14 * day, MaxBytes: total - e1own, MinAge: time.Hour}
	removed, usage, err := lastuse.Prune(context.Background(), roots, limits, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(paths(removed), []string{"e1"}) {
		t.Fatalf("removed %v, want [e1]: the least recently used, and only it", paths(removed))
	}
	if removed[0].Bytes != e1own || !strings.Contains(removed[0].Reason, "beyond the caches' bound") {
		t.Errorf("e1 removed as %+v, want %d bytes (the shared file is e3's) and the size reason", removed[0], e1own)
	}
	if usage.Bytes != total-e1own || usage.Entries != 2 {
		t.Errorf("usage %+v, want 2 entries of %d bytes", usage, total-e1own)
	}
	if !exists(filepath.Join(e3, "tree", "shared")) {
		t.Error("the shared file went with e1")
	}
	// A bound nothing fits: all but what was used within MinAge go.
	limits.MaxBytes = 1
	removed, _, err = lastuse.Prune(context.Background(), roots, limits, time.Now())
	if err != nil || !slices.Equal(paths(removed), []string{"e2"}) || !exists(e3) {
		t.Errorf("removed %v (%v), want [e2]; e3 (used 10 minutes ago) stays", paths(removed), err)
	}
}

// TestUseHoldsAndStamps: Use records the use as the directory's mtime and
// holds it until Close; a missing directory is fs.ErrNotExist.
func TestUseHoldsAndStamps(t *testing.T) {
	root := t.TempDir()
	dir := entry(t, root, "e", 10, 30*day)
	var s lastuse.Set
	if err := s.Use(dir); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(dir); time.Since(st.ModTime()) > time.Hour {
		t.Errorf("mtime %v after Use: the use is not recorded", st.ModTime())
	}
	if release, ok := lastuse.Exclusive(dir); ok {
		release()
		t.Error("not held after Use")
	}
	if err := s.Use(dir); err != nil { // again: one hold
		t.Fatal(err)
	}
	// Old by the clock of 30 days from now, but held: it stays.
	if removed, _, _ := lastuse.Prune(context.Background(), []lastuse.Root{{Dir: root}}, lastuse.Limits{UnusedFor: 14 * day}, time.Now().Add(30*day)); len(removed) != 0 {
		t.Errorf("a held entry was pruned: %v", removed)
	}
	s.Close()
	if release, ok := lastuse.Exclusive(dir); !ok {
		t.Error("held after Close")
	} else {
		release()
	}
	if err := s.Use(filepath.Join(root, "absent")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Use of a missing directory = %v, want fs.ErrNotExist", err)
	}
	s.Close()
}

// TestHoldAfterRemoval: a process that waits for an entry a pruner is
// taking away gets fs.ErrNotExist, never the removed directory.
func TestHoldAfterRemoval(t *testing.T) {
	root := t.TempDir()
	dir := entry(t, root, "e", 10, 30*day)
	release, ok := lastuse.Exclusive(dir)
	if !ok {
		t.Fatal("Exclusive of an unheld directory failed")
	}
	if _, ok := lastuse.Exclusive(dir); ok {
		t.Error("a second Exclusive succeeded")
	}
	got := make(chan error, 1)
	go func() {
		f, err := lastuse.Hold(dir)
		if f != nil {
			f.Close()
		}
		got <- err
	}()
	if err := os.Rename(dir, filepath.Join(root, "aside")); err != nil {
		t.Fatal(err)
	}
	release()
	if err := <-got; !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Hold of a directory taken away = %v, want fs.ErrNotExist", err)
	}
}

// TestRemoveRechecks: an entry used after it was listed stays (due judges
// its modification time again under the lock).
func TestRemoveRechecks(t *testing.T) {
	root := t.TempDir()
	dir := entry(t, root, "e", 10, 30*day)
	if ok, err := lastuse.Remove(context.Background(), dir, func(time.Time) bool { return false }); ok || err != nil || !exists(dir) {
		t.Errorf("Remove with due false = %v, %v; want it kept", ok, err)
	}
	if ok, err := lastuse.Remove(context.Background(), dir, func(time.Time) bool { return true }); !ok || err != nil || exists(dir) {
		t.Errorf("Remove = %v, %v; want it gone", ok, err)
	}
}

// cancelAfter is a context whose Err turns to context.Canceled after n
// calls: a cancellation that lands midway through a removal, exactly.
type cancelAfter struct {
	context.Context
	n atomic.Int64
}

func newCancelAfter(n int64) *cancelAfter {
	c := &cancelAfter{Context: context.Background()}
	c.n.Store(n)
	return c
}

func (c *cancelAfter) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// TestPruneCancelled: a done ctx removes nothing; one done midway through a
// removal stops it between two files, the entry renamed aside already (no
// holder gets it again), and the next prune removes that leftover however
// recent it looks.
func TestPruneCancelled(t *testing.T) {
	root := t.TempDir()
	dir := entry(t, root, "e", 10, 30*day)
	for i := range 50 {
		if err := os.WriteFile(filepath.Join(dir, "f"+strings.Repeat("x", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	age1(t, dir, 30*day)
	roots := []lastuse.Root{{Dir: root}}
	limits := lastuse.Limits{UnusedFor: 14 * day}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if removed, _, err := lastuse.Prune(done, roots, limits, time.Now()); len(removed) != 0 || !errors.Is(err, context.Canceled) || !exists(dir) {
		t.Fatalf("Prune with a done ctx = %v, %v; want nothing removed, context.Canceled", paths(removed), err)
	}
	ok, err := lastuse.Remove(newCancelAfter(10), dir, func(time.Time) bool { return true })
	if !ok || !errors.Is(err, context.Canceled) || exists(dir) {
		t.Fatalf("Remove cancelled midway = %v, %v (entry exists %v); want it taken, context.Canceled", ok, err, exists(dir))
	}
	left, _ := os.ReadDir(root)
	if len(left) != 1 || !lastuse.Leftover(left[0].Name()) {
		t.Fatalf("after a stopped removal %s holds %v, want one leftover", root, left)
	}
	if rest, _ := os.ReadDir(filepath.Join(root, left[0].Name())); len(rest) == 0 {
		t.Fatal("the removal was not stopped midway: the leftover is empty")
	}
	removed, _, err := lastuse.Prune(context.Background(), roots, limits, time.Now())
	if err != nil || len(removed) != 1 || !lastuse.Leftover(filepath.Base(removed[0].Path)) {
		t.Fatalf("the next Prune removed %v (%v), want the leftover", paths(removed), err)
	}
	if left, _ := os.ReadDir(root); len(left) != 0 {
		t.Errorf("%s still holds %v", root, left)
	}
}

// onFirstErr is a context that calls f at its first Err, from inside the
// removal: what a concurrent process sees at that moment.
type onFirstErr struct {
	context.Context
	once sync.Once
	f    func()
}

func (c *onFirstErr) Err() error { c.once.Do(c.f); return nil }

// TestHolderWaitsForRenameOnly: once an entry is renamed aside the pruner
// lets go of its lock, so a process that opened the entry before and
// waits to hold it is not kept waiting while the tree is unlinked (it
// would not obey SIGTERM there); it finds the entry gone.
func TestHolderWaitsForRenameOnly(t *testing.T) {
	root := t.TempDir()
	dir := entry(t, root, "e", 10, 30*day)
	waiting, err := os.Open(dir) // a holder between its open and its flock
	if err != nil {
		t.Fatal(err)
	}
	defer waiting.Close()
	var lockErr error
	ctx := &onFirstErr{Context: context.Background(), f: func() {
		lockErr = syscall.Flock(int(waiting.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	}}
	if ok, err := lastuse.Remove(ctx, dir, func(time.Time) bool { return true }); !ok || err != nil || exists(dir) {
		t.Fatalf("Remove = %v, %v; want it gone", ok, err)
	}
	if lockErr != nil {
		t.Errorf("a holder could not lock the entry while its tree was being removed: %v", lockErr)
	}
}
