package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/converge-go/converge/store"
)

// errDown is what every call returns while an Outage is down.
var errDown = fmt.Errorf("%w: store unreachable (simulated outage)", store.ErrUnavailable)

// Outage wraps a store so that it can be made unreachable, as a network
// partition between a controller and its store would: while down, every
// call fails with store.ErrUnavailable and every open watch breaks (its
// Events close and its Err is store.ErrUnavailable). The store behind it
// is untouched and keeps its data.
type Outage[T any] struct {
	inner store.Store[T]

	mu      sync.Mutex
	down    bool
	watches map[*outageWatch[T]]struct{}
}

var _ store.Store[int] = (*Outage[int])(nil)

// NewOutage returns s behind a switch, reachable.
func NewOutage[T any](s store.Store[T]) *Outage[T] {
	return &Outage[T]{inner: s, watches: make(map[*outageWatch[T]]struct{})}
}

// SetDown makes the store unreachable (true) or reachable again (false).
// Going down breaks every open watch.
func (o *Outage[T]) SetDown(down bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.down = down
	if !down {
		return
	}
	for w := range o.watches {
		w.broken.Store(true)
		w.inner.Stop()
	}
	clear(o.watches)
}

// Down reports whether the store is unreachable.
func (o *Outage[T]) Down() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.down
}

func (o *Outage[T]) check() error {
	if o.Down() {
		return errDown
	}
	return nil
}

// Get calls the store unless it is down.
func (o *Outage[T]) Get(ctx context.Context, key string) (store.Object[T], error) {
	if err := o.check(); err != nil {
		return store.Object[T]{}, err
	}
	return o.inner.Get(ctx, key)
}

// List calls the store unless it is down.
func (o *Outage[T]) List(ctx context.Context, prefix string) ([]store.Object[T], int64, error) {
	if err := o.check(); err != nil {
		return nil, 0, err
	}
	return o.inner.List(ctx, prefix)
}

// Create calls the store unless it is down.
func (o *Outage[T]) Create(ctx context.Context, key string, value T, guards ...store.Guard) (store.Object[T], error) {
	if err := o.check(); err != nil {
		return store.Object[T]{}, err
	}
	return o.inner.Create(ctx, key, value, guards...)
}

// Update calls the store unless it is down.
func (o *Outage[T]) Update(ctx context.Context, key string, value T, revision int64, guards ...store.Guard) (store.Object[T], error) {
	if err := o.check(); err != nil {
		return store.Object[T]{}, err
	}
	return o.inner.Update(ctx, key, value, revision, guards...)
}

// Delete calls the store unless it is down.
func (o *Outage[T]) Delete(ctx context.Context, key string, revision int64, guards ...store.Guard) (int64, error) {
	if err := o.check(); err != nil {
		return 0, err
	}
	return o.inner.Delete(ctx, key, revision, guards...)
}

// Revision calls the store unless it is down.
func (o *Outage[T]) Revision(ctx context.Context) (int64, error) {
	if err := o.check(); err != nil {
		return 0, err
	}
	return o.inner.Revision(ctx)
}

// Watch opens a watch on the store unless it is down; the watch breaks
// when the store goes down.
func (o *Outage[T]) Watch(ctx context.Context, prefix string, after int64) (store.Watcher[T], error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	inner, err := o.inner.Watch(ctx, prefix, after)
	if err != nil {
		return nil, err
	}
	w := &outageWatch[T]{outage: o, inner: inner}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.down { // went down while the watch was being opened
		inner.Stop()
		return nil, errDown
	}
	o.watches[w] = struct{}{}
	return w, nil
}

// outageWatch is a watch that an outage can break.
type outageWatch[T any] struct {
	outage *Outage[T]
	inner  store.Watcher[T]
	broken atomic.Bool // set before inner is stopped by an outage
}

func (w *outageWatch[T]) Events() <-chan store.Event[T] { return w.inner.Events() }

func (w *outageWatch[T]) Err() error {
	if w.broken.Load() {
		return errDown
	}
	return w.inner.Err()
}

func (w *outageWatch[T]) Stop() {
	w.outage.mu.Lock()
	delete(w.outage.watches, w)
	w.outage.mu.Unlock()
	w.inner.Stop()
}
