package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/runmill/verify/pkg/rmerr"
)

// Sweep removes what runs of a crashed runmill left behind: every container
// (with its task, killed, and its snapshot) labelled by a runmill process
// that no longer exists, and that process's FIFO and probe directories.
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
			errs = append(errs, err)
			continue
		}
		removed = append(removed, "container "+c.ID())
	}
	for _, sub := range []string{"fifo", "probe"} {
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
