package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"

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
// container, so such a bundle belongs to no run, live or dead. Only a
// rootfs that is not a mount point and holds nothing but empty directories
// (runc's mount points) is removed. A mounted or non-empty one of this
// state directory is what reap could not remove, reported; another state
// directory's is its own sweep's to judge, and never fails this one.
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
			here := false
			if spec, err := bundleSpec(bundle); err == nil {
				_, here = s.specOwner(spec)
			}
			if mounted[rootfs] {
				if here {
					errs = append(errs, fmt.Errorf("task bundle %s: its rootfs is still mounted; left in place", bundle))
				}
				continue
			}
			removeEmptyDirs(rootfs)
			if _, err := os.Lstat(rootfs); !errors.Is(err, os.ErrNotExist) {
				if here {
					errs = append(errs, fmt.Errorf("task bundle %s: its rootfs holds files; left in place", bundle))
				}
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
