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

// ownWrite tracks the writes made through the controller to one key of its
// view: while writes are in flight the changes the cache reports for the
// key are held (they may be their echoes); once a write is known, its
// object is handed to reconciles until the cache holds it.
type ownWrite[T any] struct {
	inflight int
	held     []heldChange
	// obj is the newest object written (for a delete, Key and Revision
	// only, with deleted set); zero Revision if none.
	obj     store.Object[T]
	deleted bool
	// echoes are the revisions of the writes (not deletes) made here
	// whose watch events have not arrived yet: a change at one of them is
	// an echo, any other is someone else's (echoes may arrive late, after
	// a newer own write has completed). It starts in echoBuf.
	echoes  []int64
	echoBuf [2]int64
}

// isEcho reports whether rev is one of the pending echoes, and forgets it
// and every older one (events arrive in revision order).
func (ow *ownWrite[T]) isEcho(rev int64) bool {
	for i, r := range ow.echoes {
		if r == rev {
			ow.echoes = ow.echoes[i+1:]
			return true
		}
	}
	return false
}

// heldChange is a change reported while a write to its key was in flight.
type heldChange struct {
	rev     int64
	initial bool
}

// beginWrite records a write to key about to be made; endWrite records its
// result. It returns the key's record of writes in flight, nil for a key
// outside the controller's view.
func (c *Controller[T]) beginWrite(key string) *ownWrite[T] {
	if !strings.HasPrefix(key, c.opts.Prefix) {
		return nil
	}
	c.mu.Lock()
	ow := c.own[key]
	if ow == nil {
		ow = c.newOwnLocked()
		setKey(c.own, &c.ownPeak, key, ow)
	}
	ow.inflight++
	c.mu.Unlock()
	return ow
}

// endWrite records the result of a write to key that beginWrite returned
// ow for.
func (c *Controller[T]) endWrite(key string, ow *ownWrite[T], obj store.Object[T], deleted bool, err error) {
	if ow == nil {
		return
	}
	c.mu.Lock()
	ow.inflight--
	if err == nil && obj.Revision > ow.obj.Revision {
		ow.obj, ow.deleted = obj, deleted
	}
	if err == nil && !deleted && obj.Revision > 0 {
		ow.echoes = append(ow.echoes, obj.Revision)
	}
	var wake []heldChange
	if ow.inflight == 0 {
		// Every held change is now known: this write's echo, or
		// someone else's change.
		for _, h := range ow.held {
			if !ow.isEcho(h.rev) {
				c.addPendingLocked(key, h.rev, time.Now())
				wake = append(wake, h)
			}
		}
		ow.held = nil
		if ow.obj.Revision == 0 || c.observedLocked(key, ow.obj.Revision) {
			// Nothing written, or its echo has been seen (and held,
			// and sorted out above). The cache may hold the write
			// before observe hears of it: then the entry stays, to
			// recognise the echo.
			c.dropOwnLocked(key, ow)
		}
	}
	c.mu.Unlock()
	for _, h := range wake {
		c.q().AddWith(key, queue.AddOptions{Priority: h.priority(), Tags: trigWrite})
	}
}

// newOwnLocked returns an empty record of writes in flight, recycled if
// one is free; c.mu is held. Records come in chunks of ownChunk: when many
// writes wait for their echoes at once (a burst of status writes), that is
// one allocation per ownChunk writes.
func (c *Controller[T]) newOwnLocked() *ownWrite[T] {
	if len(c.freeOwn) == 0 {
		chunk := make([]ownWrite[T], ownChunk)
		for i := range chunk {
			c.freeOwn = append(c.freeOwn, &chunk[i])
		}
	}
	n := len(c.freeOwn)
	ow := c.freeOwn[n-1]
	c.freeOwn[n-1] = nil
	c.freeOwn = c.freeOwn[:n-1]
	ow.echoes = ow.echoBuf[:0]
	return ow
}

// dropOwnLocked forgets key's record of writes, which has none in flight
// (so nothing else refers to it), and keeps it for reuse; c.mu is held.
// Like the other per-key maps, own is rebuilt small once a burst of
// writes waiting for their echoes is over.
func (c *Controller[T]) dropOwnLocked(key string, ow *ownWrite[T]) {
	forgetKey(&c.own, &c.ownPeak, key)
	if len(c.freeOwn) < maxFreeOwn {
		*ow = ownWrite[T]{}
		c.freeOwn = append(c.freeOwn, ow)
	}
}

// maxFreeOwn bounds the records of writes kept for reuse, and ownChunk is
// how many newOwnLocked allocates at once. A chunk's memory goes back once
// none of its records is in use or kept.
const (
	maxFreeOwn = 256
	ownChunk   = 16
)

func (h heldChange) priority() int {
	if h.initial {
		return queue.PriorityLow
	}
	return queue.PriorityNormal
}

// ownChangeLocked sorts out a change of key that the controller may have
// written itself; c.mu is held. It returns hold if the change must not wake
// the key now: it is held while a write is in flight (if kept: a change the
// predicates let through), or it is the echo of a write made through
// Request.Store.
func (c *Controller[T]) ownChangeLocked(ch *change[T], kept bool) (hold bool) {
	key := ch.key()
	ow := c.own[key]
	if ow == nil {
		return false
	}
	rev := ch.revision()
	if ow.inflight > 0 {
		if kept {
			ow.held = append(ow.held, heldChange{rev: rev, initial: ch.Initial})
		}
		return true
	}
	echo := ch.HasCur && ow.isEcho(rev)
	if rev >= ow.obj.Revision {
		c.dropOwnLocked(key, ow) // the cache has caught up with the newest write
	}
	return echo
}

// ownObjectLocked returns the object a reconcile of key must see instead of
// cached, if the controller wrote a newer one than the cache holds; c.mu is
// held.
func (c *Controller[T]) ownObjectLocked(key string, cached store.Object[T], present bool) (obj store.Object[T], deleted, ok bool) {
	ow := c.own[key]
	if ow == nil || ow.obj.Revision == 0 || ow.obj.Revision <= cached.Revision {
		return cached, !present, false
	}
	if ow.deleted {
		last := cached
		last.Revision = ow.obj.Revision
		return last, true, true
	}
	return ow.obj, false, true
}
