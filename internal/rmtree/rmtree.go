// Package rmtree deletes directory trees runmill made, including ones made
// read-only (prepared dependencies, a check that ran chmod -R a-w), with a
// bounded pool of goroutines: unlinking is kernel work on separate
// directories, so a few directories in parallel finish well before one.
package rmtree

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// Pool bounds the goroutines its removals use beyond their callers'; the
// removals sharing one Pool share its bound.
type Pool struct {
	slots chan struct{} // one token per extra goroutine
}

// New returns a Pool of workers extra goroutines.
func New(workers int) *Pool { return &Pool{slots: make(chan struct{}, workers)} }

// Tree removes dir and everything below it; a missing dir is not an error.
// A file or symlink at dir is removed itself, as os.RemoveAll does: a link
// is never followed into a tree elsewhere.
func (p *Pool) Tree(dir string) error { return p.TreeContext(context.Background(), dir) }

// TreeContext is Tree that stops, between two entries, once ctx is done,
// returning ctx's error and leaving the rest in place: a pruner a SIGTERM
// cancels must not first finish unlinking a tree of a million files.
func (p *Pool) TreeContext(ctx context.Context, dir string) error {
	if st, err := os.Lstat(dir); err == nil && !st.IsDir() {
		return os.Remove(dir)
	}
	err := p.dir(ctx, dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// dir empties and removes one directory, handing subdirectories to free
// pool slots and removing the rest itself.
func (p *Pool) dir(ctx context.Context, dir string) error {
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
			if ctx.Err() != nil {
				break
			}
			path := filepath.Join(dir, de.Name())
			if de.IsDir() {
				select {
				case p.slots <- struct{}{}:
					wg.Add(1)
					go func() {
						defer wg.Done()
						defer func() { <-p.slots }()
						if err := p.dir(ctx, path); err != nil {
							record(err)
						}
					}()
				default:
					if err := p.dir(ctx, path); err != nil {
						record(err)
					}
				}
				continue
			}
			err := syscall.Unlink(path)
			if err == syscall.EACCES || err == syscall.EPERM {
				// A directory made read-only (chmod -R a-w) stops a
				// non-root owner; make it writable once and retry.
				if !fixed {
					fixed = true
					os.Chmod(dir, 0o700)
				}
				err = syscall.Unlink(path)
			}
			if err != nil && err != syscall.ENOENT {
				record(&os.PathError{Op: "unlink", Path: path, Err: err})
			}
		}
		if ctx.Err() != nil {
			record(ctx.Err())
			break
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
