package checkout

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/runmill/verify/internal/rmtree"
	"github.com/runmill/verify/pkg/rmerr"
)

// removeHint is the fix of every RM-CHECKOUT-002: the directories are
// runmill's own; the repository has nothing to clean up.
const removeHint = "delete the named directory by hand as root; it is runmill's, the repository holds no registration of it"

// remover deletes directory trees (rmtree) with a pool shared by every
// removal of a Manager; in the background they overlap the next check run
// instead of delaying it.
type remover struct {
	*rmtree.Pool

	wg   sync.WaitGroup
	mu   sync.Mutex
	errs []error
}

func newRemover(workers int) *remover {
	return &remover{Pool: rmtree.New(workers)}
}

// background deletes dir without blocking the caller; wait reports the
// outcome.
func (r *remover) background(dir string) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		if err := r.Tree(dir); err != nil {
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
