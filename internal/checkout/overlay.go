package checkout

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/internal/mountinfo"
	"github.com/runmill/verify/pkg/harness"
	"github.com/runmill/verify/pkg/rmerr"
)

// Layered checkouts
//
// Writing a commit's files is most of what a fresh checkout costs (1 000
// files: 60–70 ms on a journaled ext4, a second on a filesystem that has just
// deleted many inodes), and a verification makes many checkouts of the same
// two commits. In layered mode the Manager writes each commit's tree once, as
// a *layer*, and every checkout of that commit is an overlayfs mount:
//
//	<session>/layers/<commit>/          the commit, written by git once (lower, never mounted writable)
//	<session>/ovl/<commit12>-<n>/upper  this checkout's own writable layer (empty when made)
//	<session>/ovl/<commit12>-<n>/work   overlayfs's work directory
//	<session>/<commit12>-<n>/           the mount: Checkout.Dir
//
// Freshness holds as before, and more strongly: whatever a run (or runmill's
// own report handling) writes lands in that checkout's upper layer and is
// destroyed with it; the shared layer is never reachable writable by a check
// (the sandbox binds the mount read-only) nor written by runmill after git
// made it. The engine still hashes every checkout before and after its run,
// so a layer that changed between two checkouts would show as a different
// "before" hash of the same commit.
//
// Overlay mounts need root and a containerd that sees this process's mounts
// (the same mount namespace): otherwise the task would see the empty mount
// point. EnableLayers checks what it can here; the caller checks the daemon.

// layer is one commit's tree, written once per Manager.
type layer struct {
	done chan struct{} // closed when dir is ready or err set
	dir  string
	err  error
}

// EnableLayers switches the Manager to layered checkouts after proving that
// an overlay mount works under the state directory. It returns an error that
// says why not (not root, no overlayfs, a state path overlayfs cannot
// name); the Manager then keeps making full checkouts, which are as fresh,
// only slower. Call it before the first Create.
func (m *Manager) EnableLayers() error {
	if os.Geteuid() != 0 {
		return errors.New("layered checkouts need root (overlayfs mounts)")
	}
	// overlayfs separates its options with ',' and lower layers with ':';
	// a path holding either (or '\\', its escape) cannot be named safely.
	if strings.ContainsAny(m.session, ",:\\") {
		return fmt.Errorf("the state directory %s holds ',', ':' or '\\', which overlayfs options cannot carry", m.session)
	}
	test := filepath.Join(m.session, "ovl", "mount-test")
	defer m.rm.Tree(test)
	lower, upper, work, merged := filepath.Join(test, "lower"), filepath.Join(test, "upper"), filepath.Join(test, "work"), filepath.Join(test, "merged")
	for _, d := range []string{lower, upper, work, merged} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(lower, "f"), []byte("x"), 0o644); err != nil {
		return err
	}
	if err := mountOverlay(lower, upper, work, merged); err != nil {
		return err
	}
	_, statErr := os.Stat(filepath.Join(merged, "f"))
	if err := mountinfo.Unmount(merged); err != nil {
		return err
	}
	if statErr != nil {
		return fmt.Errorf("an overlay mount does not show its lower layer: %w", statErr)
	}
	bytes, inodes, ok := mountLayerTmpfs(filepath.Join(m.session, "layers"), layerTmpfsBytes())
	m.mu.Lock()
	m.layered = true
	m.layersInRAM, m.tmpfsBytes, m.tmpfsInodes = ok, bytes, inodes
	m.mu.Unlock()
	return nil
}

// layerTmpfsBytes is how much memory the commits' layers may take: a
// quarter of what runmill itself may use — its memory cgroup's limit (v1
// or v2, the lowest up the hierarchy), not the host's RAM — because tmpfs
// pages are charged to that cgroup and cannot be reclaimed. The other three
// quarters are runmill's margin: its own heap (770 MB at the report budget,
// docs/benchmarks.md) and the page cache of what it reads and writes on
// disk; the checks themselves run in their own cgroups. Without a limit it
// is a quarter of the host's RAM, as before. A layer that does not fit what
// is left is written on disk instead (layerOf).
var layerTmpfsBytes = func() int64 { return memoryLimit("/", hostRAM()) / 4 }

// minLayerTmpfs: below this the layers stay on disk (a tmpfs that holds no
// real commit only costs a mount).
const minLayerTmpfs = 1 << 20

// tmpfsInodeBytes is the memory one tmpfs inode and its dentry take (about
// 0.7 KiB and 0.2 KiB of slab): nr_inodes is set so that the inodes of a
// full tmpfs cost at most a quarter of its size again, since a tree of a
// million empty files would otherwise fill memory without a data page.
const tmpfsInodeBytes = 1 << 10

// mountLayerTmpfs puts the session's layers on a private tmpfs of size
// bytes: measured on this project's machine (docs/benchmarks.md), writing a
// 1 000-file commit with git takes 1.0–1.3 s on an ext4 that has recently
// deleted many inodes (ext4's inode allocator skips and re-reads recently
// freed inodes) and 0.11–0.16 s on tmpfs, and a layer on tmpfs is freed by
// one unmount at Close instead of an unlink per file. Nothing else changes:
// git writes the same tree, every checkout is an overlay over it and is
// hashed before and after its run. It returns the tmpfs's bytes and inodes;
// ok false: the layers stay on the state dir's filesystem.
func mountLayerTmpfs(dir string, size int64) (bytes, inodes int64, ok bool) {
	size &^= 4095
	if size < minLayerTmpfs {
		return 0, 0, false
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, 0, false
	}
	inodes = size / 4 / tmpfsInodeBytes
	opts := fmt.Sprintf("mode=0755,size=%d,nr_inodes=%d", size, inodes)
	if syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts) != nil {
		return 0, 0, false
	}
	return size, inodes, true
}

// Layered reports whether checkouts are overlay mounts over shared layers.
func (m *Manager) Layered() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.layered
}

// layerOf returns the written layer of commit id, of measured size s,
// writing it on first use: on the tmpfs when s fits what is left of it,
// else on disk.
func (m *Manager) layerOf(ctx context.Context, id string, s git.TreeSize) (string, error) {
	return m.layerOnce(ctx, id, "creating checkout of "+id, func() (bool, func()) { return m.reserveTmpfs(s) }, func(dir string) error {
		err := os.MkdirAll(filepath.Dir(dir), 0o755)
		if err == nil {
			err = m.readable(filepath.Dir(dir), 0o755)
		}
		if err == nil {
			err = m.populate(ctx, &Checkout{Dir: dir, GitDir: filepath.Join(dir, ".git"), Commit: id})
		}
		return err
	})
}

// layerOnce returns the layer named key, written by fill on first use;
// concurrent callers wait for the one writer. inRAM, when not nil, says
// whether the layer is placed on the tmpfs (and how to give its room back);
// nil places it there. A layer that failed is not kept, so the next caller
// tries again (a cancelled context, say, is no property of what the layer
// holds).
func (m *Manager) layerOnce(ctx context.Context, key, what string, inRAM func() (bool, func()), fill func(dir string) error) (string, error) {
	m.mu.Lock()
	l, ok := m.layers[key]
	if !ok {
		l = &layer{done: make(chan struct{}), dir: filepath.Join(m.session, "layers", key)}
		m.layers[key] = l
	}
	ram := m.layersInRAM
	m.mu.Unlock()
	if !ok {
		release := func() {}
		if ram && inRAM != nil {
			var fits bool
			if fits, release = inRAM(); !fits {
				ram, l.dir = false, filepath.Join(m.session, "layers-disk", key)
			}
		}
		err := fill(l.dir)
		if err != nil && ram && ctx.Err() == nil {
			// The tmpfs is full after all (the measure counts git's
			// blobs, and a checkout may convert line endings or
			// encodings): the disk, as without it.
			m.rm.Tree(l.dir)
			release()
			l.dir = filepath.Join(m.session, "layers-disk", key)
			err = fill(l.dir)
		}
		if err != nil {
			m.rm.Tree(l.dir)
			m.mu.Lock()
			delete(m.layers, key)
			m.mu.Unlock()
			l.err = err
		}
		close(l.done)
	}
	select {
	case <-l.done:
	case <-ctx.Done():
		return "", fmt.Errorf("%s: %w", what, ctx.Err())
	}
	return l.dir, l.err
}

// mountLayered mounts c.Dir as an overlay over the commit's layer; s is
// the commit's measured size.
func (m *Manager) mountLayered(ctx context.Context, c *Checkout, s git.TreeSize, pins []harness.Pin) error {
	lower, err := m.layerOf(ctx, c.Commit, s)
	if err != nil {
		return err
	}
	pins, removals := splitPins(pins)
	if len(pins) > 0 {
		top, err := m.pinLayerOf(ctx, pins)
		if err != nil {
			return err
		}
		lower = top + ":" + lower // overlayfs: the leftmost lower layer is the topmost
	}
	fail := func(err error, what string) error {
		return rmerr.Wrap(rmerr.CheckoutCreate, err, "creating checkout of %s: %s", c.Commit, what)
	}
	upper, work := filepath.Join(c.ovl, "upper"), filepath.Join(c.ovl, "work")
	for _, d := range []string{filepath.Dir(c.ovl), c.ovl, upper, work, c.Dir} {
		if err := os.Mkdir(d, 0o755); err != nil && !(d == filepath.Dir(c.ovl) && errors.Is(err, os.ErrExist)) {
			return fail(err, "making directories")
		}
		if err := m.readable(d, 0o755); err != nil {
			return fail(err, "making directories")
		}
	}
	if err := mountOverlay(lower, upper, work, c.Dir); err != nil {
		return fail(err, "mounting the overlay")
	}
	c.mounted = true
	// Removals are whiteouts in this checkout's own upper directory: the
	// shared layers stay as git wrote them.
	return removePins(c.Dir, removals)
}

func mountOverlay(lower, upper, work, target string) error {
	// index=off: the layer is never exported or hard-linked across layers,
	// and an index would tie the work directory to this one upper.
	opts := "lowerdir=" + lower + ",upperdir=" + upper + ",workdir=" + work
	err := syscall.Mount("overlay", target, "overlay", syscall.MS_NOSUID|syscall.MS_NODEV, opts)
	if err != nil {
		return &os.PathError{Op: "mount overlay", Path: target, Err: err}
	}
	return nil
}
