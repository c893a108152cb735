package reconcile

import (
	"time"

	"github.com/converge-go/converge/internal/mapshrink"
	"github.com/converge-go/converge/store"
)

// verdict is what observe does with one change.
type verdict uint8

const (
	drop verdict = iota // filtered out by a predicate, covered, or an own write's echo
	wake                // filtered out, but wakes a conflicted key
	keep                // queued and waited for
)

// batchObserved notes that observe is about to hand a batch of changes to
// changeObserved: the newest revision, and the keys changed at it, whatever
// the batch's order (an initial list's revisions come in key order, not
// revision order). The batch counts against the changes reserve made room
// for.
func (l *ledger[T]) batchObserved(changes []change[T]) {
	l.reserved = max(0, l.reserved-len(changes))
	top := l.observed.Load()
	for i := range changes {
		top = max(top, changes[i].Revision())
	}
	if top > l.observed.Load() {
		l.observed.Store(top)
		if len(l.observedKeys) > 64 {
			l.observedKeys = make(map[string]struct{})
		} else {
			clear(l.observedKeys)
		}
	}
	for i := range changes {
		if changes[i].Revision() == top {
			l.observedKeys[changes[i].Key()] = struct{}{}
		}
	}
}

// seen reports whether observe has seen key's change at rev (the cache
// holds changes before observe hears of them).
func (l *ledger[T]) seen(key string, rev int64) bool {
	observed := l.observed.Load()
	if rev < observed {
		return true
	}
	_, ok := l.observedKeys[key]
	return rev == observed && ok
}

// changeObserved records a change of the cache, seen at now, that the
// predicates let through (kept) or not, and says what observe does with
// it. unwanted reports a deletion nothing will reconcile, whose tombstone
// can go unless the key is queued.
//
// A kept change also returns the hint of the key's record, for the queue
// to hand out with the key (see hinted).
func (l *ledger[T]) changeObserved(ch *change[T], kept bool, now monoTime) (v verdict, hint uint32, unwanted bool) {
	key, rev := ch.Key(), ch.Revision()
	if r, ok := l.coveredAhead[key]; ok && rev <= r {
		// A reconcile already covered this change. It may still be the
		// echo of an own write (that reconcile was given the written
		// object): the write's record must hear of it.
		if rev == r {
			forgetKey(&l.coveredAhead, &l.coveredAheadPeak, key)
		}
		l.ownChange(ch, false)
		return drop, 0, !ch.HasCur
	}
	if l.ownChange(ch, kept) {
		return drop, 0, false // the controller's own write: no wake-up
	}
	if !kept {
		r := l.lookup(key)
		switch {
		case r != nil && r.has(conflicted):
			// A reconcile whose write conflicted waits for this newer
			// object: wake it, whatever the predicates say.
			r.flags &^= conflicted
			l.release(r)
			return wake, 0, false
		case !ch.HasCur && (r == nil || r.pend == 0):
			return drop, 0, true
		}
		return drop, 0, false
	}
	return keep, hintOf(l.changed(key, rev, now)), false
}

// changed records a change of key at rev, seen at now, that a reconcile
// must cover, and returns the slot of key's record.
func (l *ledger[T]) changed(key string, rev int64, now monoTime) int32 {
	r, slot := l.slotted(key)
	p := l.pendingOf(r)
	if p == nil {
		l.startPending(r, slot, pendingChange{first: rev, latest: rev, since: now})
		return slot
	}
	p.latest = max(p.latest, rev)
	if p.inflight {
		p.touched = true
		if rev > p.covering && p.next == 0 {
			p.next, p.nextSince = rev, now
		}
	}
	return slot
}

// reconcileBegun returns the object a reconcile of key is given, cached
// (present if the cache holds the key) or the controller's own newer write
// of it, and marks the key's pending changes up to that object's revision
// as in flight. hint is what the queue handed out with the key (see
// hinted).
func (l *ledger[T]) reconcileBegun(key string, hint uint32, cached store.Object[T], present bool) (obj store.Object[T], deleted bool) {
	obj, deleted = l.ownObject(key, cached, present)
	if r := l.hinted(key, hint); r != nil {
		if p := l.pendingOf(r); p != nil {
			p.inflight, p.covering, p.next, p.touched = true, obj.Revision, 0, false
		}
	}
	return obj, deleted
}

// writeConflicted marks key as waiting for the newer object its write lost
// against: its arrival wakes the key whatever the predicates say.
func (l *ledger[T]) writeConflicted(key string) {
	l.recordOf(key).flags |= conflicted
}

// conflictResolved clears key's conflict mark (the newer object is
// already cached, or a reconcile covered it).
func (l *ledger[T]) conflictResolved(key string) {
	if r := l.lookup(key); r != nil && r.has(conflicted) {
		r.flags &^= conflicted
		l.release(r)
	}
}

// ending is how one reconcile ended, as reconcileEnded records it.
type ending struct {
	key      string
	hint     uint32 // where the key's record may be (ledger.hinted)
	revision int64  // of the object the reconcile was given
	stores   uint32 // ledger.stores when it began
	deleted  bool   // the request was a deletion
	outcome  Outcome
	why      trigger
	err      error
	start    time.Time
	elapsed  time.Duration
}

// ended is what reconcileEnded reports back.
type ended struct {
	// latency is the convergence latency of the changes a successful
	// reconcile covered (ok false if it covered none).
	latency time.Duration
	ok      bool
	// gone: a deletion was dealt with and nothing more will hand the key
	// out on the ledger's account; its tombstone can go unless the key is
	// queued again.
	gone bool
}

// reconcileEnded records a reconcile's outcome: a success or a terminal
// failure covers the key's pending changes up to the revision it was
// given (changes that arrived meanwhile stay pending) and, for a deletion,
// ends the key's record; every other outcome is kept for introspection.
func (l *ledger[T]) reconcileEnded(e ending) ended {
	// A reconcile of an object of a store since replaced covers nothing.
	covered := e.outcome.Settled() && e.stores == l.stores
	converged := covered && e.outcome != TerminalFailure
	now := e.start.Add(e.elapsed) // when the reconcile returned, without another clock read
	// The cache may hold the object this reconcile saw before observe has
	// heard of its change: then it is covered ahead, and its arrival must
	// neither wake the key nor leave it pending.
	ahead := covered && e.revision > 0 && !l.seen(e.key, e.revision)
	if ahead {
		l.coveredAhead[e.key] = max(l.coveredAhead[e.key], e.revision)
		mapshrink.Note(l.coveredAhead, &l.coveredAheadPeak)
	}
	r := l.hinted(e.key, e.hint)
	if r == nil {
		r = l.recordOf(e.key)
	}
	since, touched, sinceOK := l.coverPending(r, e, covered, now)
	var res ended
	if converged && sinceOK {
		res.latency, res.ok = now.Sub(l.timeAt(since)), true
	}
	if covered {
		r.flags &^= conflicted
		l.setFailing(r, false)
	}
	if covered && e.deleted {
		l.forgetLast(r) // deleted and dealt with: forget it
		l.release(r)
		res.gone = !touched && !ahead
		return res
	}
	l.recordLast(r, e, converged, now)
	if res.ok {
		r.converged = res.latency
	}
	return res
}

// coverPending applies a reconcile's end to r's pending change: it returns
// when the oldest change the reconcile covered was seen (sinceOK false if
// it covered none) and whether a change arrived while it ran.
func (l *ledger[T]) coverPending(r *record, e ending, covered bool, now time.Time) (since monoTime, touched, sinceOK bool) {
	p := l.pendingOf(r)
	switch {
	case p == nil:
	case !p.inflight:
		if covered && p.latest <= e.revision {
			// Recorded after this reconcile started, for a change it saw.
			since, sinceOK = p.since, true
			l.endPending(r)
		}
	case !covered:
		touched = p.touched
		p.inflight, p.touched = false, false
	case p.latest <= p.covering:
		since, touched, sinceOK = p.since, p.touched, true
		l.endPending(r)
	default:
		// Changes newer than the reconcile's object arrived while it
		// ran: they stay pending, from the first of them.
		since, touched, sinceOK = p.since, p.touched, true
		if p.next == 0 {
			p.next, p.nextSince = p.latest, l.mono(now)
		}
		*p = pendingChange{slot: p.slot, first: p.next, latest: p.latest, since: p.nextSince}
		l.signal()
	}
	return since, touched, sinceOK
}

// recordLast makes e the record's last reconcile.
func (l *ledger[T]) recordLast(r *record, e ending, converged bool, now time.Time) {
	if !r.has(reconciled) {
		r.success, r.failingSince, r.converged = 0, 0, 0
		l.lastCount++
	}
	r.flags |= reconciled
	r.code, r.at, r.duration, r.revision, r.triggers = codeOf(e.outcome), wallOf(e.start), e.elapsed, e.revision, e.why
	switch {
	case converged:
		r.success, r.failingSince = wallOf(e.start), 0
	case e.outcome.Failed() && r.failingSince == 0:
		r.failingSince = wallOf(now)
	}
	if e.outcome.Failed() {
		// A terminal failure is not retried, but its key is out of date
		// until a change reconciles it: it fails, for the stale alarm.
		l.setFailing(r, true)
	}
	l.setError(r, e.err)
}

// dropped forgets everything the ledger knows of key but its own writes in
// flight and the revisions covered ahead (they sort out echoes still to
// come): a sharded controller's key this replica does not own.
func (l *ledger[T]) dropped(key string) {
	// A deletion mark may outlive the key's record (a change no predicate
	// let through leaves none): forget it either way.
	l.deletionSeen(key, false, 0)
	l.tracesDropped(key)
	r := l.lookup(key)
	if r == nil {
		return
	}
	if r.pend != 0 {
		l.endPending(r)
	}
	l.forgetLast(r)
	r.flags = 0
	l.release(r)
}

// storeReplaced rebases the ledger on a store of another identity, whose
// list the cache is about to install: the new store's revisions say
// nothing of the old one's (they may be lower). Pending changes keep their
// keys and the times they were seen, but from revision 0, so that a
// settled reconcile of the new store's object covers them; observed, the
// revisions covered ahead and the objects and echoes of own writes are
// forgotten; a reconcile in flight covers nothing when it ends, and the
// results of own writes in flight are not the new store's (ownWrite.stale).
// The waiters of WaitForRevision are woken.
func (l *ledger[T]) storeReplaced() {
	l.stores++
	for i := range l.pend {
		p := &l.pend[i]
		*p = pendingChange{slot: p.slot, inflight: p.inflight, touched: p.touched, since: p.since}
	}
	l.observed.Store(0)
	l.observedKeys = make(map[string]struct{})
	l.coveredAhead = make(map[string]int64)
	l.coveredAheadPeak = 0
	l.storeReplacedTraces()
	t := &l.own
	t.mu.Lock()
	var idle []string
	for key, ow := range t.keys {
		if ow.inflight == 0 {
			idle = append(idle, key)
			continue
		}
		ow.obj, ow.deleted, ow.held, ow.echoes, ow.stale = store.Object[T]{}, false, nil, ow.echoBuf[:0], true
	}
	for _, key := range idle {
		t.drop(key, t.keys[key])
	}
	t.mu.Unlock()
	l.signal()
}
