// Sessions: each Manager holds one locked session directory under
// STATE/checkouts; the sweep removes the sessions whose runmill died.

package checkout

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/runmill/verify/internal/fsname"
	"github.com/runmill/verify/internal/mountinfo"
	"github.com/runmill/verify/pkg/rmerr"
)

// openSession creates this Manager's session directory and holds its lock.
// The lock file is locked under a temporary name and then renamed into
// place, so a concurrent Sweep never sees a published lock that nobody holds.
func (m *Manager) openSession() error {
	if err := os.MkdirAll(m.checkouts, 0o755); err != nil {
		return rmerr.Wrap(rmerr.CheckoutCreate, err, "creating %s", m.checkouts)
	}
	name := fmt.Sprintf("s%d-%s", os.Getpid(), fsname.Random(4))
	tmp := filepath.Join(m.checkouts, tmpLockPrefix+name)
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return rmerr.Wrap(rmerr.CheckoutCreate, err, "creating session lock in %s", m.checkouts)
	}
	if err := flock(f, false); err != nil {
		f.Close()
		os.Remove(tmp)
		return rmerr.Wrap(rmerr.CheckoutCreate, err, "locking %s", tmp)
	}
	fmt.Fprintf(f, "pid %d\n", os.Getpid())
	if err := os.Rename(tmp, filepath.Join(m.checkouts, name+lockSuffix)); err != nil {
		f.Close()
		os.Remove(tmp)
		return rmerr.Wrap(rmerr.CheckoutCreate, err, "publishing session lock %s", name)
	}
	m.lock = f
	m.session = filepath.Join(m.checkouts, name)
	m.trash = filepath.Join(m.session, trashDir)
	if err := os.MkdirAll(m.trash, 0o755); err != nil {
		m.releaseSession()
		return rmerr.Wrap(rmerr.CheckoutCreate, err, "creating session directory %s", m.session)
	}
	return nil
}

const (
	lockSuffix    = ".lock"
	tmpLockPrefix = ".tmp-"
	trashDir      = "trash"
)

func (m *Manager) releaseSession() {
	os.Remove(m.session + lockSuffix)
	m.lock.Close() // closing the descriptor releases the flock
}

func flock(f *os.File, nonBlocking bool) error {
	how := syscall.LOCK_EX
	if nonBlocking {
		how |= syscall.LOCK_NB
	}
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			return err
		}
	}
}

// Sweep removes what crashed runmill processes left under the state
// directory: the checkouts and half-deleted checkouts of every session whose
// lock nobody holds. Sessions of live processes (their lock is held) and this
// Manager's own are left alone. It returns the paths it removed.
func (m *Manager) Sweep(ctx context.Context) ([]string, error) {
	list, err := os.ReadDir(m.checkouts)
	if err != nil {
		return nil, rmerr.Wrap(rmerr.CheckoutRemove, err, "reading %s", m.checkouts).
			WithHint(removeHint)
	}
	own := filepath.Base(m.session)
	sessions := map[string]bool{}
	var removed []string
	var errs []error
	for _, de := range list {
		name := de.Name()
		switch {
		case strings.HasPrefix(name, tmpLockPrefix):
			// A lock that was never published: its creator died before the
			// rename, or is between create and rename right now.
			if f, err := lockIfDead(filepath.Join(m.checkouts, name)); err == nil && f != nil {
				os.Remove(filepath.Join(m.checkouts, name))
				f.Close()
			}
		case strings.HasSuffix(name, lockSuffix):
			sessions[strings.TrimSuffix(name, lockSuffix)] = true
		case de.IsDir():
			sessions[name] = true
		}
	}
	for s := range sessions {
		if s == own || ctx.Err() != nil {
			continue
		}
		lockPath := filepath.Join(m.checkouts, s+lockSuffix)
		f, err := lockIfDead(lockPath)
		if err != nil {
			errs = append(errs, rmerr.Wrap(rmerr.CheckoutRemove, err, "checking session lock %s", lockPath).
				WithHint(removeHint))
			continue
		}
		if f == nil && fileExists(lockPath) {
			continue // a live runmill holds it
		}
		// Dead: its lock is free, or gone while its directory remains.
		dir := filepath.Join(m.checkouts, s)
		leftovers := sessionLeftovers(dir)
		// A crashed layered session leaves overlay mounts: unmount them
		// first, so the deletion never walks into a mount.
		unmounted, err := mountinfo.UnmountUnder(dir)
		for _, p := range unmounted {
			what := "overlay mount "
			switch {
			case p == filepath.Join(dir, "layers"):
				what = "layers tmpfs " // overlay.go: mountLayerTmpfs
			case strings.HasPrefix(p, filepath.Join(dir, "views")+"/"):
				what = "dependency view tmpfs " // deps/cow.go: a copy-on-write view's upper layer
			}
			removed = append(removed, what+p)
		}
		if err != nil {
			errs = append(errs, rmerr.Wrap(rmerr.CheckoutRemove, err, "unmounting leftover checkouts under %s", dir).
				WithHint(removeHint))
			continue
		}
		if err := m.rm.Tree(dir); err != nil {
			errs = append(errs, rmerr.Wrap(rmerr.CheckoutRemove, err, "removing leftover session %s", dir).
				WithHint(removeHint))
		} else {
			removed = append(removed, leftovers...)
			os.Remove(lockPath)
		}
		if f != nil {
			f.Close()
		}
	}
	if err := ctx.Err(); err != nil {
		errs = append(errs, fmt.Errorf("sweeping %s: %w", m.checkouts, err))
	}
	slices.Sort(removed)
	return removed, errors.Join(errs...)
}

// lockIfDead takes the lock at path without waiting. It returns the held
// lock when its owner is gone, nil when the file does not exist or a live
// process holds it.
func lockIfDead(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	if err := flock(f, true); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, nil
		}
		return nil, err
	}
	return f, nil
}

func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// sessionLeftovers lists the checkouts of a dead session: live ones and
// those caught halfway through deletion.
func sessionLeftovers(dir string) []string {
	var out []string
	list, _ := os.ReadDir(dir)
	for _, de := range list {
		if de.Name() == trashDir {
			trash, _ := os.ReadDir(filepath.Join(dir, trashDir))
			for _, t := range trash {
				out = append(out, filepath.Join(dir, trashDir, t.Name()))
			}
			continue
		}
		out = append(out, filepath.Join(dir, de.Name()))
	}
	if len(out) == 0 {
		out = append(out, dir)
	}
	return out
}
