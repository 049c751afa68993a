package deps

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Copy-on-write views (issue 24, Build 8)
//
// Tools write into node_modules as a matter of course: vite bundles a
// vite.config.* into node_modules/.vite-temp before it loads it, and babel,
// eslint and others keep caches in node_modules/.cache. On the read-only
// view they fail at the base and the candidate alike, so an honest project
// could not be verified at all. With CopyOnWrite the view is an overlay
// (mounted by runc in the task, sandbox.View): the hard-linked cached
// install is its lower layer, never written; the upper layer and
// overlayfs's work directory live on a tmpfs of their own in the run's
// view directory (in the checkout session, swept with it after a crash),
// unmounted and removed with the view after the run:
//
//	<session>/views/npm-*/node_modules   the hard-linked install (lower)
//	<session>/views/npm-*/rw/            tmpfs: cowBytes, cowInodes
//	<session>/views/npm-*/rw/upper       root's, 01777: what the check writes
//	<session>/views/npm-*/rw/work        overlayfs's work directory
//
// The upper layer's root is sticky and root's, as /tmp is: the check adds
// its own entries at node_modules' top level (.vite-temp, .cache), but it
// can remove or rename no installed package, and a package's own files and
// directories keep their read-only modes (root's, no write bit), so it
// cannot change them either. Whatever it writes stays out of the measured
// tree: node_modules is excluded from the tree hash (View.Exclude) and the
// checkout's node_modules is only the empty mount point on the host.

// The upper layer's bounds: writes past them fail with ENOSPC in the task.
// Its pages are charged to the writer's memory cgroup (the task's, whose
// limit bounds them too) and freed when the tmpfs is unmounted.
const (
	cowBytes  = 512 << 20
	cowInodes = 1 << 16
)

// copyOnWrite makes the view's upper layer: a tmpfs in the view's directory
// holding the overlay's upper and work directories.
func (v *View) copyOnWrite() error {
	rw := filepath.Join(v.made, "rw")
	if err := os.Mkdir(rw, 0o700); err != nil {
		return err
	}
	opts := fmt.Sprintf("mode=0700,size=%d,nr_inodes=%d", cowBytes, cowInodes)
	if err := syscall.Mount("tmpfs", rw, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		return &os.PathError{Op: "mount tmpfs", Path: rw, Err: err}
	}
	v.upper = rw
	upper, work := filepath.Join(rw, "upper"), filepath.Join(rw, "work")
	for _, d := range []string{upper, work} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
	}
	// Mkdir's mode passes through the umask, which drops the sticky and
	// write bits.
	if err := os.Chmod(upper, 0o777|os.ModeSticky); err != nil {
		return err
	}
	v.Mounts[0].Upper, v.Mounts[0].Work = upper, work
	return nil
}
