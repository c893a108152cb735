package reconcile

import (
	"github.com/converge-go/converge/internal/mapshrink"
	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/store"
)

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
	// stale: writes were in flight when the store was replaced
	// (ledger.storeReplaced); their results are of the old store, and
	// nothing is recorded until none is in flight.
	stale bool
}

// isEcho reports whether rev is one of the echoes still expected, and forgets it
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

func (h heldChange) priority() int {
	if h.initial {
		return queue.PriorityLow
	}
	return queue.PriorityNormal
}

// writeBegun records a write to key, a key of the cache's view, about to
// be made, and returns the key's record of writes in flight.
func (l *ledger[T]) writeBegun(key string) *ownWrite[T] {
	ow := l.own[key]
	if ow == nil {
		ow = l.newOwn()
		l.own[key] = ow
		mapshrink.Note(l.own, &l.ownPeak)
	}
	ow.inflight++
	return ow
}

// writeEnded records, at now, the result of a write to key that
// writeBegun returned ow for: obj written (deleted for a delete) if ok. It
// returns the changes held while writes were in flight that were someone
// else's: they are now pending, and the caller queues their key.
func (l *ledger[T]) writeEnded(key string, ow *ownWrite[T], obj store.Object[T], deleted, ok bool, now monoTime) []heldChange {
	ow.inflight--
	ok = ok && !ow.stale
	if ok && obj.Revision > ow.obj.Revision {
		ow.obj, ow.deleted = obj, deleted
	}
	if ok && !deleted && obj.Revision > 0 {
		ow.echoes = append(ow.echoes, obj.Revision)
	}
	if ow.inflight > 0 {
		return nil
	}
	// Every held change is now known: this write's echo, or someone
	// else's change.
	var wake []heldChange
	for _, h := range ow.held {
		if !ow.isEcho(h.rev) {
			l.changed(key, h.rev, now)
			wake = append(wake, h)
		}
	}
	ow.held = nil
	if ow.obj.Revision == 0 || l.seen(key, ow.obj.Revision) {
		// Nothing written, or its echo has been seen (and held, and
		// sorted out above). The cache may hold the write before observe
		// hears of it: then the entry stays, to recognise the echo.
		l.dropOwn(key, ow)
	}
	return wake
}

// ownChange sorts out a change of key that the controller may have written
// itself. It returns hold if the change must not wake the key now: it is
// held while a write is in flight (if kept: a change the predicates let
// through), or it is the echo of a write made through Request.Store.
func (l *ledger[T]) ownChange(ch *change[T], kept bool) (hold bool) {
	key := ch.key()
	ow := l.own[key]
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
		l.dropOwn(key, ow) // the cache has caught up with the newest write
	}
	return echo
}

// ownObject returns the object a reconcile of key must see: the cached one
// (present if the cache holds the key), or the controller's own newer
// write of it.
func (l *ledger[T]) ownObject(key string, cached store.Object[T], present bool) (obj store.Object[T], deleted bool) {
	if len(l.own) == 0 {
		return cached, !present
	}
	ow := l.own[key]
	if ow == nil || ow.obj.Revision == 0 || ow.obj.Revision <= cached.Revision {
		return cached, !present
	}
	if ow.deleted {
		last := cached
		last.Revision = ow.obj.Revision
		return last, true
	}
	return ow.obj, false
}

// newOwn returns an empty record of writes in flight, recycled if one is
// free. Records come in chunks of ownChunk: when many writes wait for their
// echoes at once (a burst of status writes), that is one allocation per
// ownChunk writes.
func (l *ledger[T]) newOwn() *ownWrite[T] {
	if len(l.freeOwn) == 0 {
		chunk := make([]ownWrite[T], ownChunk)
		for i := range chunk {
			l.freeOwn = append(l.freeOwn, &chunk[i])
		}
	}
	n := len(l.freeOwn)
	ow := l.freeOwn[n-1]
	l.freeOwn[n-1] = nil
	l.freeOwn = l.freeOwn[:n-1]
	ow.echoes = ow.echoBuf[:0]
	return ow
}

// dropOwn forgets key's record of writes, which has none in flight (so
// nothing else refers to it), and keeps it for reuse. Like the side tables,
// own is rebuilt small once a burst of writes waiting for their echoes is
// over.
func (l *ledger[T]) dropOwn(key string, ow *ownWrite[T]) {
	forgetKey(&l.own, &l.ownPeak, key)
	if len(l.freeOwn) < maxFreeOwn {
		*ow = ownWrite[T]{}
		l.freeOwn = append(l.freeOwn, ow)
	}
}

// maxFreeOwn bounds the records of writes kept for reuse, and ownChunk is
// how many newOwn allocates at once. A chunk's memory goes back once none
// of its records is in use or kept.
const (
	maxFreeOwn = 256
	ownChunk   = 16
)
