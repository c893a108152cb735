package reconcile

import (
	"sync"
	"sync/atomic"

	"github.com/converge-go/converge/internal/mapshrink"
	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/store"
)

// ownWrite tracks the writes made through the controller to one key of its
// view: while writes are in flight the changes the cache reports for the
// key are held (they may be their echoes); once a write is known, its
// object is handed to reconciles until the cache holds it.
type ownWrite[T any] struct {
	inflight int32
	deleted  bool // obj is a delete
	// stale: writes were in flight when the store was replaced
	// (ledger.storeReplaced); their results are of the old store, and
	// nothing is recorded until none is in flight.
	stale bool
	// held are the changes held while writes were in flight, behind a
	// pointer (nil for none) since few keys have any: one of these
	// records waits for its echo for every status write of a burst.
	held *[]heldChange
	// obj is the newest object written (for a delete, Key and Revision
	// only, with deleted set); zero Revision if none.
	obj store.Object[T]
	// echoes are the revisions of the writes (not deletes) made here
	// whose watch events have not arrived yet: a change at one of them is
	// an echo, any other is someone else's (echoes may arrive late, after
	// a newer own write has completed). It starts in echoBuf.
	echoes  []int64
	echoBuf [2]int64
}

// heldChanges returns the changes held while writes were in flight.
func (ow *ownWrite[T]) heldChanges() []heldChange {
	if ow.held == nil {
		return nil
	}
	return *ow.held
}

// hold keeps h until the writes in flight are known.
func (ow *ownWrite[T]) hold(h heldChange) {
	if ow.held == nil {
		ow.held = new([]heldChange)
	}
	*ow.held = append(*ow.held, h)
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

// ownTable holds the records of the writes made through Request.Store to
// keys of the cache's view, until the cache holds them. It has a lock of
// its own, so that a write need not wait for the controller's mu, which
// observe and every reconcile's start and end take: a write's beginning
// takes mu alone, and so does its end when it needs nothing else of the
// ledger (writeEndedAlone). Lock order: the controller's mu, then mu.
type ownTable[T any] struct {
	mu   sync.Mutex
	keys map[string]*ownWrite[T]
	peak int
	free []*ownWrite[T]
	// n is len(keys), stored under mu: a holder of the controller's mu
	// reads it to skip mu while no write is recorded.
	n atomic.Int32
}

// writeBegun records a write to key, a key of the cache's view, about to
// be made, and returns the key's record of writes in flight. Unlike the
// ledger's other methods it needs no lock held: it takes the table's.
func (l *ledger[T]) writeBegun(key string) *ownWrite[T] {
	t := &l.own
	t.mu.Lock()
	defer t.mu.Unlock()
	ow := t.keys[key]
	if ow == nil {
		ow = t.newOwn()
		t.keys[key] = ow
		t.n.Store(int32(len(t.keys)))
		mapshrink.Note(t.keys, &t.peak)
	}
	ow.inflight++
	return ow
}

// writeEndedAlone is writeEnded for the ends that touch nothing of the
// ledger but the table: it needs no lock held, and takes the table's. It
// records nothing and reports false when the end must go to writeEnded
// instead: when this is the last write in flight and either changes were
// held meanwhile (they must be sorted out and may wake the key) or observe
// may have seen the newest write's echo (its record is then let go, which
// takes the ledger's observedKeys to decide).
func (l *ledger[T]) writeEndedAlone(key string, ow *ownWrite[T], obj store.Object[T], deleted, ok bool) bool {
	t := &l.own
	t.mu.Lock()
	defer t.mu.Unlock()
	if ow.inflight == 1 {
		if len(ow.heldChanges()) > 0 {
			return false
		}
		newest := ow.obj.Revision
		if ok && !ow.stale {
			newest = max(newest, obj.Revision)
		}
		// observe stores observed before it sorts out a batch's changes:
		// a revision above it is of a change observe has yet to sort out,
		// whose arrival finds the record; one at or below it may have
		// been sorted out already.
		if newest != 0 && newest <= l.observed.Load() {
			return false
		}
	}
	ow.ended(obj, deleted, ok)
	if ow.inflight == 0 && ow.obj.Revision == 0 {
		t.drop(key, ow) // nothing written
	}
	return true
}

// writeEnded records, at now, the result of a write to key that
// writeBegun returned ow for: obj written (deleted for a delete) if ok. It
// returns the changes held while writes were in flight that were someone
// else's: they are now pending, and the caller queues their key.
func (l *ledger[T]) writeEnded(key string, ow *ownWrite[T], obj store.Object[T], deleted, ok bool, now monoTime) []heldChange {
	t := &l.own
	t.mu.Lock()
	defer t.mu.Unlock()
	ow.ended(obj, deleted, ok)
	if ow.inflight > 0 {
		return nil
	}
	// Every held change is now known: this write's echo, or someone
	// else's change.
	var wake []heldChange
	for _, h := range ow.heldChanges() {
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
		t.drop(key, ow)
	}
	return wake
}

// ended records the result of one of the writes in flight: obj written
// (deleted for a delete) if ok, unless the store was replaced meanwhile.
func (ow *ownWrite[T]) ended(obj store.Object[T], deleted, ok bool) {
	ow.inflight--
	ok = ok && !ow.stale
	if ok && obj.Revision > ow.obj.Revision {
		ow.obj, ow.deleted = obj, deleted
	}
	if ok && !deleted && obj.Revision > 0 {
		ow.echoes = append(ow.echoes, obj.Revision)
	}
}

// ownChange sorts out a change of key that the controller may have written
// itself. It returns hold if the change must not wake the key now: it is
// held while a write is in flight (if kept: a change the predicates let
// through), or it is the echo of a write made through Request.Store.
func (l *ledger[T]) ownChange(ch *change[T], kept bool) (hold bool) {
	if l.own.n.Load() == 0 {
		return false
	}
	t := &l.own
	t.mu.Lock()
	defer t.mu.Unlock()
	key := ch.Key()
	ow := t.keys[key]
	if ow == nil {
		return false
	}
	rev := ch.Revision()
	if ow.inflight > 0 {
		if kept {
			ow.hold(heldChange{rev: rev, initial: ch.Initial})
		}
		return true
	}
	echo := ch.HasCur && ow.isEcho(rev)
	if rev >= ow.obj.Revision {
		t.drop(key, ow) // the cache has caught up with the newest write
	}
	return echo
}

// ownObject returns the object a reconcile of key must see: the cached one
// (present if the cache holds the key), or the controller's own newer
// write of it.
func (l *ledger[T]) ownObject(key string, cached store.Object[T], present bool) (obj store.Object[T], deleted bool) {
	if l.own.n.Load() == 0 {
		return cached, !present
	}
	t := &l.own
	t.mu.Lock()
	defer t.mu.Unlock()
	ow := t.keys[key]
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
func (t *ownTable[T]) newOwn() *ownWrite[T] {
	if len(t.free) == 0 {
		chunk := make([]ownWrite[T], ownChunk)
		for i := range chunk {
			t.free = append(t.free, &chunk[i])
		}
	}
	n := len(t.free)
	ow := t.free[n-1]
	t.free[n-1] = nil
	t.free = t.free[:n-1]
	ow.echoes = ow.echoBuf[:0]
	return ow
}

// drop forgets key's record of writes, which has none in flight (so
// nothing else refers to it), and keeps it for reuse. Like the ledger's
// side tables, keys is rebuilt small once a burst of writes waiting for
// their echoes is over. mu is held.
func (t *ownTable[T]) drop(key string, ow *ownWrite[T]) {
	forgetKey(&t.keys, &t.peak, key)
	t.n.Store(int32(len(t.keys)))
	if len(t.free) < maxFreeOwn {
		*ow = ownWrite[T]{}
		t.free = append(t.free, ow)
	}
}

// maxFreeOwn bounds the records of writes kept for reuse, and ownChunk is
// how many newOwn allocates at once. A chunk's memory goes back once none
// of its records is in use or kept.
const (
	maxFreeOwn = 256
	ownChunk   = 16
)
