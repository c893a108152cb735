package robustness

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/converge-go/converge/store"
)

// Compactor is a store that can discard its watch history up to and
// including a revision, as store.Memory and boltstore.Store can.
type Compactor interface {
	Compact(ctx context.Context, rev int64) error
}

// restartable is the store a run talks to: it forwards to the current
// incarnation of the backend's store and swaps it for a new one on restart.
// A restart waits for calls in flight and holds new calls until the new
// store is open, so only watches see it (they end with
// store.ErrUnavailable and are resumed).
type restartable struct {
	mu  sync.RWMutex
	cur store.Store[Value]
}

var _ store.Store[Value] = (*restartable)(nil)

// restart replaces the current store by reopen's result.
func (r *restartable) restart(reopen func(store.Store[Value]) store.Store[Value]) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cur = reopen(r.cur)
}

func (r *restartable) Get(ctx context.Context, key string) (store.Object[Value], error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.cur.Get(ctx, key)
}

func (r *restartable) List(ctx context.Context, prefix string) ([]store.Object[Value], int64, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.cur.List(ctx, prefix)
}

func (r *restartable) Create(ctx context.Context, key string, value Value, guards ...store.Guard) (store.Object[Value], error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.cur.Create(ctx, key, value, guards...)
}

func (r *restartable) Update(ctx context.Context, key string, value Value, revision int64, guards ...store.Guard) (store.Object[Value], error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.cur.Update(ctx, key, value, revision, guards...)
}

func (r *restartable) Delete(ctx context.Context, key string, revision int64, guards ...store.Guard) (int64, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.cur.Delete(ctx, key, revision, guards...)
}

func (r *restartable) Watch(ctx context.Context, prefix string, after int64) (store.Watcher[Value], error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.cur.Watch(ctx, prefix, after)
}

func (r *restartable) Revision(ctx context.Context) (int64, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.cur.Revision(ctx)
}

// Compact forwards to the current store if it is a Compactor, else fails
// with an error matching errors.ErrUnsupported.
func (r *restartable) Compact(ctx context.Context, rev int64) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return compactOrUnsupported(ctx, r.cur, rev)
}

// compactOrUnsupported compacts s if it is a Compactor, else fails with an
// error matching errors.ErrUnsupported.
func compactOrUnsupported(ctx context.Context, s store.Store[Value], rev int64) error {
	c, ok := s.(Compactor)
	if !ok {
		return fmt.Errorf("%w: store %T cannot compact", errors.ErrUnsupported, s)
	}
	return c.Compact(ctx, rev)
}
