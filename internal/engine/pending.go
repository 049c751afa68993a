package engine

// pending is a value computed in its own goroutine while the run goes on:
// a stage starts it where the work may begin and waits for it only where
// the value is needed, so the overlap the benchmarks measure
// (docs/benchmarks.md) is written once, here, and not as a channel in
// every stage.
type pending[T any] struct {
	done chan struct{}
	v    T
}

// async starts f and returns its pending result.
func async[T any](f func() T) *pending[T] {
	p := &pending[T]{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.v = f()
	}()
	return p
}

// wait blocks until the value is there; every call returns the same value.
func (p *pending[T]) wait() T {
	<-p.done
	return p.v
}
