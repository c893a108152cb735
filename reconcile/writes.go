package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/converge-go/converge/lock"
	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
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
// Over a store with the API-server layer (store/apistore, in process or
// served over HTTP) it also offers the layer's writes — UpdateStatus,
// Replace and DeleteWith — and uses them itself: an Update that removes
// the last finalizer of a marked object is recorded as the deletion it is,
// and a Delete that only marks its object is not suppressed (the mark
// wakes the key, whose reconcile then sees Request.Deleting).
//
// Reads go to the store unchanged. Keys outside the controller's prefix are
// fenced but otherwise written as they are.
type writer[T any] struct {
	// Store is the primary store: reads pass through it.
	store.Store[T]
	c    *Controller[T]
	term lock.Lock // the run's term of leadership; nil outside one
}

var (
	_ apistore.StatusWriter[int]  = (*writer[int])(nil)
	_ apistore.Replacer[int]      = (*writer[int])(nil)
	_ apistore.PropagatingDeleter = (*writer[int])(nil)
	_ store.Checker               = (*writer[int])(nil)
	_ store.Checker               = guardedWriter[int]{}
)

// newWriter returns the writer of a run of c, fenced by term if not nil.
func newWriter[T any](c *Controller[T], term lock.Lock) *writer[T] {
	return &writer[T]{Store: c.store, c: c, term: term}
}

// fence adds the term's guard to guards, or fails once the term is over.
func (w *writer[T]) fence(guards []store.Guard) ([]store.Guard, error) {
	if w.term == nil {
		return guards, nil
	}
	if err := w.term.Context().Err(); err != nil {
		return nil, fmt.Errorf("%w: the term of token %d is over", store.ErrGuardFailed, w.term.Token())
	}
	return append(slices.Clip(guards), w.term.Guard()), nil
}

// Check checks key's revision and the guards, with the term's guard added
// (store.Checker), and writes nothing: a write that would change nothing
// (store.Modify's, the API-server layer's) is still refused once the term
// is over. It records nothing, as nothing is written.
func (w *writer[T]) Check(ctx context.Context, key string, revision int64, guards ...store.Guard) error {
	g, err := w.fence(guards)
	if err != nil {
		return w.count(err)
	}
	return w.count(store.Check(ctx, w.Store, key, revision, g...))
}

func (w *writer[T]) Create(ctx context.Context, key string, value T, guards ...store.Guard) (store.Object[T], error) {
	g, err := w.fence(guards)
	if err != nil {
		return store.Object[T]{}, w.count(err)
	}
	ow := w.c.beginWrite(key)
	obj, err := w.Store.Create(ctx, key, value, g...)
	w.c.endWrite(key, ow, obj, false, err)
	return obj, w.count(err)
}

func (w *writer[T]) Update(ctx context.Context, key string, value T, revision int64, guards ...store.Guard) (store.Object[T], error) {
	obj, _, err := w.Replace(ctx, key, value, revision, guards...)
	return obj, err
}

// Replace is Update that reports whether the write deleted the object
// (apistore.Replacer): over the API-server layer, removing the last
// finalizer of a marked object does.
func (w *writer[T]) Replace(ctx context.Context, key string, value T, revision int64, guards ...store.Guard) (store.Object[T], bool, error) {
	g, err := w.fence(guards)
	if err != nil {
		return store.Object[T]{}, false, w.count(err)
	}
	ow := w.c.beginWrite(key)
	var obj store.Object[T]
	deleted := false
	if r, ok := w.Store.(apistore.Replacer[T]); ok {
		obj, deleted, err = r.Replace(ctx, key, value, revision, g...)
	} else {
		obj, err = w.Store.Update(ctx, key, value, revision, g...)
	}
	if deleted {
		w.c.endWrite(key, ow, store.Object[T]{Key: key, Revision: obj.Revision}, true, err)
	} else {
		w.c.endWrite(key, ow, obj, false, err)
	}
	return obj, deleted, w.count(err)
}

// UpdateStatus writes value's status alone (apistore.StatusWriter) if the
// store can, else the whole value, as Update does (a client of a served
// store without the layer says it cannot with errors.ErrUnsupported).
func (w *writer[T]) UpdateStatus(ctx context.Context, key string, value T, revision int64, guards ...store.Guard) (store.Object[T], error) {
	sw, ok := w.Store.(apistore.StatusWriter[T])
	if !ok {
		return w.Update(ctx, key, value, revision, guards...)
	}
	g, err := w.fence(guards)
	if err != nil {
		return store.Object[T]{}, w.count(err)
	}
	ow := w.c.beginWrite(key)
	obj, err := sw.UpdateStatus(ctx, key, value, revision, g...)
	w.c.endWrite(key, ow, obj, false, err)
	if errors.Is(err, errors.ErrUnsupported) {
		// A client of a served store without the layer: nothing was
		// written; write the whole value.
		return w.Update(ctx, key, value, revision, guards...)
	}
	return obj, w.count(err)
}

func (w *writer[T]) Delete(ctx context.Context, key string, revision int64, guards ...store.Guard) (int64, error) {
	rev, _, err := w.DeleteWith(ctx, key, revision, apistore.Background, guards...)
	return rev, err
}

// DeleteWith deletes key with propagation p (apistore.PropagatingDeleter)
// if the store can, else plainly; marked reports that the object stays,
// marked for deletion until its finalizers are removed.
func (w *writer[T]) DeleteWith(ctx context.Context, key string, revision int64, p apistore.Propagation, guards ...store.Guard) (int64, bool, error) {
	g, err := w.fence(guards)
	if err != nil {
		return 0, false, w.count(err)
	}
	ow := w.c.beginWrite(key)
	var rev int64
	marked := false
	if d, ok := w.Store.(apistore.PropagatingDeleter); ok {
		rev, marked, err = d.DeleteWith(ctx, key, revision, p, g...)
	} else {
		rev, err = w.Store.Delete(ctx, key, revision, g...)
	}
	if marked {
		// The mark is an update whose value this writer does not have:
		// record nothing, and let its event wake the key.
		w.c.endWrite(key, ow, store.Object[T]{}, false, err)
	} else {
		w.c.endWrite(key, ow, store.Object[T]{Key: key, Revision: rev}, true, err)
	}
	return rev, marked, w.count(err)
}

// count reports a fenced write that a guard rejected to Metrics, and
// returns err.
func (w *writer[T]) count(err error) error {
	if w.term != nil && err != nil && w.c.opts.Metrics != nil && errors.Is(err, store.ErrGuardFailed) {
		w.c.opts.Metrics.WriteRejected(w.c.opts.Name)
	}
	return err
}

// beginWrite records a write to key about to be made; endWrite records its
// result. It returns the key's record of writes in flight, nil for a key
// outside the controller's view. Neither takes c.mu but for the end of a
// write that changes were held for or whose echo observe may have seen
// (ledger.writeEndedAlone): a write to another key of the view, or an
// echo, wait for the bookkeeping of a write no longer than it takes.
func (c *Controller[T]) beginWrite(key string) *ownWrite[T] {
	if !strings.HasPrefix(key, c.opts.Prefix) {
		return nil
	}
	return c.led.writeBegun(key)
}

// endWrite records the result of a write to key that beginWrite returned
// ow for, and queues the key for the changes held meanwhile that were
// someone else's.
func (c *Controller[T]) endWrite(key string, ow *ownWrite[T], obj store.Object[T], deleted bool, err error) {
	if ow == nil || c.led.writeEndedAlone(key, ow, obj, deleted, err == nil) {
		return
	}
	c.mu.Lock()
	wake := c.led.writeEnded(key, ow, obj, deleted, err == nil, c.led.mono(time.Now()))
	c.mu.Unlock()
	for _, h := range wake {
		c.q().AddWith(key, queue.AddOptions{Priority: h.priority(), Tags: trigWrite})
	}
}
