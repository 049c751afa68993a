package checkout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/runmill/verify/pkg/rmerr"
)

// removeHint is the fix of every RM-CHECKOUT-002: the directories are
// runmill's own; the repository has nothing to clean up.
const removeHint = "delete the named directory by hand as root; it is runmill's, the repository holds no registration of it"

// remover deletes directory trees with a bounded pool of goroutines shared
// by every removal of a Manager. Unlinking is kernel work on separate
// directories, so a few removals in parallel finish well before one, and in
// the background they overlap the next check run instead of delaying it.
type remover struct {
	slots chan struct{} // one token per extra goroutine

	wg   sync.WaitGroup
	mu   sync.Mutex
	errs []error
}

func newRemover(workers int) *remover {
	return &remover{slots: make(chan struct{}, workers)}
}

// background deletes dir without blocking the caller; wait reports the
// outcome.
func (r *remover) background(dir string) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		if err := r.tree(dir); err != nil {
			r.mu.Lock()
			r.errs = append(r.errs, rmerr.Wrap(rmerr.CheckoutRemove, err, "removing checkout %s", dir).
				WithHint(removeHint))
			r.mu.Unlock()
		}
	}()
}

// wait blocks until every background removal so far has finished and
// returns the failures not reported before.
func (r *remover) wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("waiting for checkout removal: %w", ctx.Err())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	err := errors.Join(r.errs...)
	r.errs = nil
	return err
}

// tree removes dir and everything below it; a missing dir is not an error.
func (r *remover) tree(dir string) error {
	err := r.dir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// dir empties and removes one directory, handing subdirectories to free
// pool slots and removing the rest itself.
func (r *remover) dir(dir string) error {
	f, err := os.Open(dir)
	if errors.Is(err, syscall.EACCES) {
		// An unreadable directory (chmod 000) stops a non-root owner.
		os.Chmod(dir, 0o700)
		f, err = os.Open(dir)
	}
	if err != nil {
		if errors.Is(err, syscall.ENOTDIR) {
			return os.Remove(dir)
		}
		return err
	}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		errs   []error
		fixed  bool
		record = func(err error) {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	)
	for {
		list, rerr := f.ReadDir(1024)
		for _, de := range list {
			p := filepath.Join(dir, de.Name())
			if de.IsDir() {
				select {
				case r.slots <- struct{}{}:
					wg.Add(1)
					go func() {
						defer wg.Done()
						defer func() { <-r.slots }()
						if err := r.dir(p); err != nil {
							record(err)
						}
					}()
				default:
					if err := r.dir(p); err != nil {
						record(err)
					}
				}
				continue
			}
			err := syscall.Unlink(p)
			if err == syscall.EACCES || err == syscall.EPERM {
				// A directory made read-only (chmod -R a-w) stops a
				// non-root owner; make it writable once and retry.
				if !fixed {
					fixed = true
					os.Chmod(dir, 0o700)
				}
				err = syscall.Unlink(p)
			}
			if err != nil && err != syscall.ENOENT {
				record(&os.PathError{Op: "unlink", Path: p, Err: err})
			}
		}
		if rerr == io.EOF || len(list) == 0 {
			break
		}
		if rerr != nil {
			record(rerr)
			break
		}
	}
	f.Close()
	wg.Wait()
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := syscall.Rmdir(dir); err != nil && err != syscall.ENOENT {
		if err == syscall.EACCES || err == syscall.EPERM {
			os.Chmod(filepath.Dir(dir), 0o700)
			err = syscall.Rmdir(dir)
		}
		if err != nil && err != syscall.ENOENT {
			return &os.PathError{Op: "rmdir", Path: dir, Err: err}
		}
	}
	return nil
}
