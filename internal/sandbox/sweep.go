package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"

	"github.com/runmill/verify/internal/bounded"
	"github.com/runmill/verify/internal/mountinfo"
	"github.com/runmill/verify/pkg/rmerr"
)

// Sweep removes what runs of a crashed runmill left behind: every container
// (with its task, killed, and its snapshot) labelled by a runmill process
// that no longer exists, that process's FIFO, probe and /etc directories,
// and task bundles containerd kept after deleting their tasks (runmill
// before the fix of issue #13 S7 left one per task).
// What containerd cannot remove or has forgotten — a dead runmill's shim
// and `runc init` still holding a mounted root, issue #23 — is found by its
// bundle and /proc and removed when it is provably this state directory's
// (orphans.go): its processes, shim, mounts, cgroups and bundle.
// Containers of live runmill processes, this one included, and of processes
// in another PID namespace (which this one cannot judge) are left alone. It
// returns what it removed, for the run's record.
func (s *Sandbox) Sweep(ctx context.Context) (removed []string, err error) {
	if err := s.begin(); err != nil {
		return nil, err
	}
	defer s.inflight.Done()
	ctx = s.ctx(ctx)
	cs, err := s.client.Containers(ctx, `labels."`+labelOwner+`"`)
	if err != nil {
		return nil, rmerr.Wrap(rmerr.SandboxCleanup, err, "listing containers")
	}
	var errs []error
	// stuck: containers of this state directory's dead runmills that
	// containerd failed to remove; reaped below, then removed again.
	stuck := map[string]containerd.Container{}
	for _, c := range cs {
		labels, err := c.Labels(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		owner := labels[labelOwner]
		if owner == s.owner {
			continue
		}
		if alive, known := ownerAlive(owner); alive || !known {
			continue
		}
		if err := s.remove(ctx, c); err != nil {
			if spec, serr := c.Spec(ctx); serr == nil {
				if _, here := s.specOwner(spec); here {
					stuck[c.ID()] = c
					continue
				}
			}
			errs = append(errs, err)
			continue
		}
		removed = append(removed, "container "+c.ID())
	}
	all := processes()
	tasks := s.orphans(ctx, s.bundleRoots(ctx), stuck)
	shims, held := s.strays(ctx, all)
	for _, h := range held {
		if !slices.ContainsFunc(tasks, func(t leftover) bool { return t.id == h.id }) {
			tasks = append(tasks, h)
		}
	}
	if len(tasks) > 0 || len(shims) > 0 {
		r, e := s.reap(ctx, tasks, shims, all)
		removed, errs = append(removed, r...), append(errs, e...)
	}
	for id, c := range stuck {
		if err := s.remove(ctx, c); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, "container "+id)
	}
	rb, berrs := s.sweepBundles(ctx)
	removed, errs = append(removed, rb...), append(errs, berrs...)
	// Last: a dead run's parent cgroup empties once its tasks are reaped.
	rc, cerrs := s.cgroup.sweep(s.owner)
	removed, errs = append(removed, rc...), append(errs, cerrs...)
	for _, sub := range ownedSubdirs {
		dir := filepath.Join(s.workDir, sub)
		entries, err := os.ReadDir(dir)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ns, _ := os.Readlink("/proc/self/ns/pid")
		for _, e := range entries {
			pid, start, ok := strings.Cut(e.Name(), "-")
			if !ok || e.Name() == ownerDirName(s.owner) {
				continue
			}
			if alive, known := ownerAlive(ns + "/" + pid + "/" + start); alive || !known {
				continue
			}
			path := filepath.Join(dir, e.Name())
			if err := os.RemoveAll(path); err != nil {
				errs = append(errs, err)
				continue
			}
			removed = append(removed, "directory "+path)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return removed, rmerr.Wrap(rmerr.SandboxCleanup, err, "sweeping leftovers")
	}
	return removed, nil
}

// sweepBundles removes the task bundles in runmill's namespace whose
// container containerd no longer knows. containerd deletes a task's bundle
// before its container record, and a bundle is made only for an existing
// container, so such a bundle belongs to no run, live or dead: it is a
// leftover, or one containerd is still deleting. One of this state
// directory, made by this runmill or a dead one, is settled
// (settleBundle): unmounted, waited for and removed; another live
// runmill's is that runmill's own to remove.
// Another state directory's is removed only when its rootfs is not a mount
// point and holds nothing but empty directories; otherwise it is its own
// sweep's to judge, and never fails this one.
func (s *Sandbox) sweepBundles(ctx context.Context) (removed []string, errs []error) {
	points, _ := mountinfo.Self()
	mounted := map[string]bool{}
	for _, p := range points {
		mounted[p] = true
	}
	for _, root := range s.bundleRoots(ctx) {
		dir := filepath.Join(root, s.namespace)
		entries, err := os.ReadDir(dir)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			if _, err := s.client.LoadContainer(ctx, e.Name()); !errdefs.IsNotFound(err) {
				continue // its container exists (or cannot be judged)
			}
			bundle := filepath.Join(dir, e.Name())
			rootfs := filepath.Join(bundle, "rootfs")
			if spec, err := bundleSpec(bundle); err == nil {
				if owner, here := s.specOwner(spec); here {
					if alive, known := ownerAlive(owner); owner != s.owner && (alive || !known) {
						continue // another live runmill's: in the middle of its own removal
					}
					r, err := settleBundle(ctx, bundle)
					removed = append(removed, r...)
					if err != nil {
						errs = append(errs, err)
					}
					continue
				}
			}
			if mounted[rootfs] {
				continue
			}
			removeEmptyDirs(rootfs)
			if exists(rootfs) {
				continue
			}
			if err := os.RemoveAll(bundle); err != nil {
				errs = append(errs, err)
				continue
			}
			removed = append(removed, "task bundle "+bundle)
		}
	}
	return removed, errs
}

// settleBundle removes a task bundle of this state directory whose
// container is gone. Its root is judged only once nothing is mounted at or
// below the bundle: every mount stacked on the root is unmounted by
// umount(2) on the path itself (lazily when busy), not by a mount-table
// snapshot that a mount changing elsewhere on the machine can leave
// stale, and so is every mount the table lists below the bundle. The root
// must then hold nothing but runc's mount points (empty directories and
// empty files, on the bundle's own filesystem); while it does not — a
// killed task's last processes still exiting, containerd still deleting
// the bundle — it is tried again, reapWait at most and never past ctx.
// The bundle vanishing meanwhile (containerd finished) is success.
func settleBundle(ctx context.Context, bundle string) (removed []string, err error) {
	rootfs := filepath.Join(bundle, "rootfs")
	deadline := time.Now().Add(reapWait)
	for {
		if !exists(bundle) {
			return removed, nil
		}
		err = unmountBundle(bundle, rootfs, &removed)
		if err == nil {
			removeMountPoints(rootfs)
			if !exists(rootfs) {
				if err = os.RemoveAll(bundle); err == nil {
					return append(removed, "task bundle "+bundle), nil
				}
			} else {
				err = fmt.Errorf("task bundle %s: its rootfs holds files (%s); left in place", bundle, heldFiles(rootfs))
			}
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return removed, err
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// unmountBundle unmounts everything at or below a bundle, adding each to
// removed, and says whether anything is still mounted there.
func unmountBundle(bundle, rootfs string, removed *[]string) error {
	// Mounts below the root first (the table's deepest first), then what
	// is stacked on the root itself.
	under, uerr := mountinfo.UnmountUnder(bundle)
	for _, p := range slices.Compact(under) {
		*removed = append(*removed, "mount "+p)
	}
	n, err := mountinfo.UnmountStacked(rootfs, 16)
	if n > 0 && !slices.Contains(under, rootfs) {
		*removed = append(*removed, "mount "+rootfs)
	}
	if err = errors.Join(uerr, err); err != nil {
		return fmt.Errorf("task bundle %s: %w; left in place", bundle, err)
	}
	if left, _ := mountinfo.Under(bundle); len(left) > 0 {
		return fmt.Errorf("task bundle %s: still mounted at %s; left in place", bundle, strings.Join(left, ", "))
	}
	return nil
}

// removeMountPoints removes dir when it holds nothing but what runc makes
// in a root for the mounts of a spec: directories and empty regular files.
// Anything else — a file with content, a link, a device, another
// filesystem (a mount the table did not show) — keeps it, and the
// directories holding it, in place.
func removeMountPoints(dir string) {
	var top unix.Stat_t
	if unix.Lstat(dir, &top) != nil {
		return
	}
	var walk func(string)
	walk = func(d string) {
		entries, err := os.ReadDir(d)
		if err != nil {
			return
		}
		for _, e := range entries {
			p := filepath.Join(d, e.Name())
			var st unix.Stat_t
			if unix.Lstat(p, &st) != nil || st.Dev != top.Dev {
				continue
			}
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFDIR:
				walk(p)
			case unix.S_IFREG:
				if st.Size == 0 {
					_ = os.Remove(p)
				}
			}
		}
		_ = os.Remove(d) // fails, as it should, on a directory still holding something
	}
	walk(dir)
}

// heldFiles names (the first few of) what keeps a directory from being
// removed: what below it is no directory, with its kind and size.
func heldFiles(dir string) string {
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if len(out) == 8 {
			out = append(out, "…")
			return filepath.SkipAll
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, fmt.Sprintf("%s: %s, %d bytes", rel, bounded.KindName(fi.Mode()), fi.Size()))
		return nil
	})
	return strings.Join(out, "; ")
}
