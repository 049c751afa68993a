package checkout

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

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
	m.mu.Lock()
	m.layered = true
	m.layersInRAM = mountLayerTmpfs(filepath.Join(m.session, "layers"))
	m.mu.Unlock()
	return nil
}

// layerTmpfsSize caps the memory the commits' layers may take; a layer that
// does not fit is written on disk instead (layerOnce).
var layerTmpfsSize = "size=25%"

// mountLayerTmpfs puts the session's layers on a private tmpfs: measured on
// this project's machine (docs/benchmarks.md), writing a 1 000-file commit
// with git takes 1.0–1.3 s on an ext4 that has recently deleted many inodes
// (ext4's inode allocator skips and re-reads recently freed inodes) and
// 0.11–0.16 s on tmpfs, and a layer on tmpfs is freed by one unmount at
// Close instead of an unlink per file. Nothing else changes: git writes the
// same tree, every checkout is an overlay over it and is hashed before and
// after its run. false: the layers stay on the state dir's filesystem.
func mountLayerTmpfs(dir string) bool {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false
	}
	return syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=0755,"+layerTmpfsSize) == nil
}

// Layered reports whether checkouts are overlay mounts over shared layers.
func (m *Manager) Layered() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.layered
}

// layerOf returns the written layer of commit id, writing it on first use.
func (m *Manager) layerOf(ctx context.Context, id string) (string, error) {
	return m.layerOnce(ctx, id, "creating checkout of "+id, func(dir string) error {
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
// concurrent callers wait for the one writer. A layer that failed is not
// kept, so the next caller tries again (a cancelled context, say, is no
// property of what the layer holds).
func (m *Manager) layerOnce(ctx context.Context, key, what string, fill func(dir string) error) (string, error) {
	m.mu.Lock()
	l, ok := m.layers[key]
	if !ok {
		l = &layer{done: make(chan struct{}), dir: filepath.Join(m.session, "layers", key)}
		m.layers[key] = l
	}
	m.mu.Unlock()
	if !ok {
		err := fill(l.dir)
		if err != nil && m.layersInRAM && ctx.Err() == nil {
			// The tmpfs is full (or refused the tree): the disk, as
			// without it.
			m.rm.Tree(l.dir)
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

// mountLayered mounts c.Dir as an overlay over the commit's layer.
func (m *Manager) mountLayered(ctx context.Context, c *Checkout, pins []harness.Pin) error {
	lower, err := m.layerOf(ctx, c.Commit)
	if err != nil {
		return err
	}
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
	return nil
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
