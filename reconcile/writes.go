package reconcile

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/converge-go/converge/lock"
	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/store"
)

// writer is the store a reconcile writes through (Request.Store): the
// controller's primary store, with three things added to every write.
//
//   - Fencing: while the controller runs in a term of leadership (its Run
//     context carries a lock.Lock), every write carries the term's guard, so
//     the store rejects it with store.ErrGuardFailed once another process
//     leads; a write made after the term ended fails with ErrGuardFailed
//     without reaching the store.
//   - Echo suppression: the watch event of a write made here updates the
//     cache but neither wakes the key nor cancels its backoff. Changes made
//     by anyone else still wake it at once.
//   - Read your writes: a reconcile of a key never receives an object older
//     than the newest one written here for it (the written object is handed
//     over until the cache catches up).
//
// Reads go to the store unchanged. Keys outside the controller's prefix are
// fenced but otherwise written as they are.
type writer[T any] struct {
	// Store is the primary store, seen through lock.Fenced during a term:
	// reads pass through, writes carry the term's guard.
	store.Store[T]
	c      *Controller[T]
	fenced bool // writes carry a term's guard
}

// newWriter returns the writer of a run of c, fenced by term if not nil.
func newWriter[T any](c *Controller[T], term lock.Lock) *writer[T] {
	w := &writer[T]{Store: c.store, c: c}
	if term != nil {
		if fenced, err := lock.Fenced(c.store, term); err == nil { // err only for nil inputs
			w.Store, w.fenced = fenced, true
		}
	}
	return w
}

func (w *writer[T]) Create(ctx context.Context, key string, value T, guards ...store.Guard) (store.Object[T], error) {
	ow := w.c.beginWrite(key)
	obj, err := w.Store.Create(ctx, key, value, guards...)
	w.c.endWrite(key, ow, obj, false, err)
	w.count(err)
	return obj, err
}

func (w *writer[T]) Update(ctx context.Context, key string, value T, revision int64, guards ...store.Guard) (store.Object[T], error) {
	ow := w.c.beginWrite(key)
	obj, err := w.Store.Update(ctx, key, value, revision, guards...)
	w.c.endWrite(key, ow, obj, false, err)
	w.count(err)
	return obj, err
}

func (w *writer[T]) Delete(ctx context.Context, key string, revision int64, guards ...store.Guard) (int64, error) {
	ow := w.c.beginWrite(key)
	rev, err := w.Store.Delete(ctx, key, revision, guards...)
	w.c.endWrite(key, ow, store.Object[T]{Key: key, Revision: rev}, true, err)
	w.count(err)
	return rev, err
}

// count reports a fenced write that a guard rejected to Metrics.
func (w *writer[T]) count(err error) {
	if w.fenced && err != nil && w.c.opts.Metrics != nil && errors.Is(err, store.ErrGuardFailed) {
		w.c.opts.Metrics.WriteRejected(w.c.opts.Name)
	}
}

// beginWrite records a write to key about to be made; endWrite records its
// result. It returns the key's record of writes in flight, nil for a key
// outside the controller's view.
func (c *Controller[T]) beginWrite(key string) *ownWrite[T] {
	if !strings.HasPrefix(key, c.opts.Prefix) {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.led.writeBegun(key)
}

// endWrite records the result of a write to key that beginWrite returned
// ow for, and queues the key for the changes held meanwhile that were
// someone else's.
func (c *Controller[T]) endWrite(key string, ow *ownWrite[T], obj store.Object[T], deleted bool, err error) {
	if ow == nil {
		return
	}
	c.mu.Lock()
	wake := c.led.writeEnded(key, ow, obj, deleted, err == nil, c.led.mono(time.Now()))
	c.mu.Unlock()
	for _, h := range wake {
		c.q().AddWith(key, queue.AddOptions{Priority: h.priority(), Tags: trigWrite})
	}
}
