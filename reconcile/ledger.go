package reconcile

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/converge-go/converge/internal/mapshrink"
)

// ledger is the one owner of a controller's per-key bookkeeping: one record
// per key that has a pending change, a last reconcile or a conflict mark,
// and side tables for the rare facts (the error text of a failed
// reconcile, the writes made through Request.Store until their echoes
// arrive, revisions covered before observe heard of them). Every change
// goes through a method named for an event of the loop (ledger_events.go,
// ledger_writes.go); a record is let go in one place, release, once it
// holds nothing.
//
// It is not safe for concurrent use: the controller's mu guards it, but
// for its table of own writes, which has a lock of its own (ownTable):
// writeBegun and writeEndedAlone may be called without the controller's
// mu, so that a write through Request.Store does not wait for observe or
// for other workers' reconciles to start and end.
//
// The keys a circuit holds while a dependency is down are not the
// ledger's: they wait in the queue (see circuit), and the ledger's
// unsettled records say which to retry when it is up.
//
// Invariants (checked after every step by FuzzLedger against a model):
//   - A key has a record exactly when it is pending, has a last
//     reconcile, or is marked conflicted; index, the record's key and its
//     slot agree, and a free slot holds the zero record.
//   - A record is pending exactly when pend holds an entry pointing back
//     at its slot (rec.pend is one more than the entry's position).
//   - A pending change has first <= latest; while it is in flight,
//     covering is the revision the reconcile was given and next, when
//     set, is the first change seen meanwhile that is newer than covering.
//   - errs holds a key exactly when its record has failed set; failing
//     holds a key exactly when its record has failing set, and then its
//     failingSince is not zero.
//   - progress, when not nil, is closed the moment a pending change is
//     covered or dropped.
//   - Every revision held (pending changes, observed, coveredAhead, own
//     writes) is of the store the cache follows since the latest
//     storeReplaced; a reconcile that began before it covers nothing.
//   - traces (Options.Tracer; empty without one) holds an entry only for
//     a key with a record, and only while it holds a cause (at most
//     tracing.MaxCauses) or the key's latest trace ID (see keyTrace).
//   - The records of own writes are what one lock over the whole ledger
//     would leave (FuzzLedger's model has no other): a write's end that
//     writeEndedAlone takes, also while observe sorts out a batch, leaves
//     them as writeEnded would have before that batch, and wakes nothing.
type ledger[T any] struct {
	// epoch is when the controller was made: pending changes keep their
	// times as monoTime after it.
	epoch time.Time
	recs  records
	// pend holds the pending changes, densely (a removal moves the last
	// entry into the hole): walking them costs their number, not the
	// number of keys.
	pend     []pendingChange
	pendPeak int
	// reserved counts the changes of a burst reserve made room for that
	// observe has yet to see: until they are seen, the room is not given
	// back (it would be at once, as the burst's first keys are
	// reconciled while the rest are still to come).
	reserved int
	// errs holds the error texts of the keys whose latest reconcile
	// failed; failing the keys whose failures are counted for the stale
	// alarm; coveredAhead, per key, a revision a successful or terminal
	// reconcile covered before observe saw its change (the cache is
	// updated before observe hears of it): when that change arrives it
	// neither wakes the key nor waits.
	errs         map[string]string
	failing      map[string]struct{}
	coveredAhead map[string]int64
	// deleting holds the keys whose latest change left them marked for
	// deletion, with when observe first saw the mark (deleting.go).
	deleting         map[string]monoTime
	deletingPeak     int
	errsPeak         int
	failingPeak      int
	coveredAheadPeak int
	// own tracks the writes made through Request.Store to keys of the
	// cache's view, until the cache holds them (ledger_writes.go). It has
	// a lock of its own, so that writes need not take the controller's.
	own ownTable[T]
	// observed is the revision of the newest change observe has seen,
	// and observedKeys the keys it has seen at that revision (several
	// keys may share one). observed is written under the controller's mu
	// and read also without it, by writeEndedAlone.
	observed     atomic.Int64
	observedKeys map[string]struct{}
	// progress is closed when a pending change is covered or dropped;
	// nil while no one waits.
	progress chan struct{}
	// lastCount counts the records with a last reconcile; walks numbers
	// the Inspect walks.
	lastCount int
	walks     uint32
	// stores counts the stores of another identity the cache moved to
	// (storeReplaced): the revisions the ledger holds are of the latest,
	// and a reconcile begun before it covers nothing.
	stores uint32
	// traces holds, for Options.Tracer, the keys' uncovered causes and
	// latest trace IDs (keyTrace); nil while nothing is traced.
	traces map[string]*keyTrace
}

// record is what the ledger keeps of one key: its last reconcile (while
// flags has reconciled) and a link to its pending change. It is 80 bytes,
// one of them per key reconciled: times as wall-clock nanoseconds, the
// outcome as a code.
type record struct {
	key string
	// revision is the object revision the latest reconcile was given.
	revision int64
	// at is when the latest reconcile started and duration how long it
	// took; success is when the latest successful one started, and
	// failingSince when the first failure after it ended (zero while the
	// key is not failing).
	at, success, failingSince wallTime
	duration                  time.Duration
	// converged is the convergence latency of the latest change a
	// successful reconcile covered.
	converged time.Duration
	triggers  trigger // what woke the key for its latest reconcile
	pend      int32   // one more than the position of its pending change in ledger.pend; 0 if none
	walk      uint32  // the last Inspect walk that met the key (see ledger.newWalk)
	code      outcomeCode
	flags     recordFlags
}

type recordFlags uint8

const (
	reconciled recordFlags = 1 << iota // the key has a last reconcile
	failed                             // it returned an error, whose text is in ledger.errs
	failingKey                         // the key is in ledger.failing
	conflicted                         // its write conflicted while the cache did not hold the newer object
)

func (r *record) has(f recordFlags) bool { return r.flags&f != 0 }

// outcome returns how the latest reconcile ended.
func (r *record) outcome() Outcome { return outcomes[r.code] }

// pendingChange records the changes of one key that no successful or
// terminal reconcile has covered yet. A reconcile covers the changes up to
// the revision of the object it was given; changes that arrive meanwhile
// stay pending, starting at the first of them.
type pendingChange struct {
	slot     int32 // the key's record
	inflight bool
	touched  bool  // a change arrived while in flight (the key will be handed out again)
	first    int64 // revision of the oldest change not yet covered
	latest   int64 // revision of the newest change
	covering int64 // revision the in-flight reconcile was given
	next     int64 // the first change newer than covering, seen while in flight
	// since is when observe saw the change at first, nextSince the one at
	// next.
	since, nextSince monoTime
}

func newLedger[T any](epoch time.Time) *ledger[T] {
	return &ledger[T]{
		epoch:        epoch,
		recs:         records{index: make(map[string]int32)},
		errs:         make(map[string]string),
		failing:      make(map[string]struct{}),
		coveredAhead: make(map[string]int64),
		deleting:     make(map[string]monoTime),
		own:          ownTable[T]{keys: make(map[string]*ownWrite[T])},
		observedKeys: make(map[string]struct{}),
	}
}

// monoTime is a time as nanoseconds since the controller's epoch (when New
// returned it), read from the monotonic clock: 8 bytes where a time.Time
// takes 24, and immune to steps of the wall clock. It may be 0 (a change
// seen in the instant of New), so it does not stand for "none".
type monoTime int64

// mono returns t as a monoTime; timeAt converts back.
func (l *ledger[T]) mono(t time.Time) monoTime { return monoTime(t.Sub(l.epoch)) }

func (l *ledger[T]) timeAt(m monoTime) time.Time { return l.epoch.Add(time.Duration(m)) }

// wallTime is a time as wall-clock nanoseconds since the Unix epoch; 0 is
// the zero time.
type wallTime int64

func wallOf(t time.Time) wallTime {
	if t.IsZero() {
		return 0
	}
	return wallTime(t.UnixNano())
}

func (w wallTime) time() time.Time {
	if w == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(w))
}

// lookup returns key's record, nil if it has none.
func (l *ledger[T]) lookup(key string) *record {
	slot, ok := l.recs.index[key]
	if !ok {
		return nil
	}
	return l.recs.at(slot)
}

// hintOf returns the hint of the record in slot: one more than the slot, so
// that zero is no hint.
func hintOf(slot int32) uint32 { return uint32(slot) + 1 }

// hinted returns key's record, nil if it has none, as lookup does, but
// first tries the slot hint names (hintOf): a hint the queue handed out
// with the key spares the index's lookup, a cache miss at 100,000 keys,
// when the key was handed out in the order its records were made. A hint
// may be stale (the record let go and its slot reused, or moved by
// rebuild) or zero: then the record there is another key's, and the index
// answers.
func (l *ledger[T]) hinted(key string, hint uint32) *record {
	if slot := int64(hint) - 1; slot >= 0 && slot < l.recs.slots() {
		if r := l.recs.at(int32(slot)); r.key == key {
			return r
		}
	}
	return l.lookup(key)
}

// recordOf returns key's record, making an empty one if it has none.
func (l *ledger[T]) recordOf(key string) *record {
	r, _ := l.slotted(key)
	return r
}

// slotted is recordOf that also returns the record's slot.
func (l *ledger[T]) slotted(key string) (*record, int32) {
	if slot, ok := l.recs.index[key]; ok {
		return l.recs.at(slot), slot
	}
	return l.recs.add(key)
}

// pendingOf returns r's pending change, nil if none.
func (l *ledger[T]) pendingOf(r *record) *pendingChange {
	if r.pend == 0 {
		return nil
	}
	return &l.pend[r.pend-1]
}

// startPending gives r, whose slot is slot, a pending change.
func (l *ledger[T]) startPending(r *record, slot int32, p pendingChange) *pendingChange {
	p.slot = slot
	if len(l.pend) == cap(l.pend) {
		// Doubled, where append grows a large slice by a quarter: a
		// burst's pending changes are then copied about once as they
		// grow, not about four times.
		l.pend = slices.Grow(l.pend, len(l.pend)+1)
	}
	l.pend = append(l.pend, p)
	l.pendPeak = max(l.pendPeak, len(l.pend))
	r.pend = int32(len(l.pend))
	return &l.pend[len(l.pend)-1]
}

// endPending drops r's pending change and tells the waiters; the record
// stays (release lets it go once it holds nothing).
func (l *ledger[T]) endPending(r *record) {
	i := int(r.pend) - 1
	last := len(l.pend) - 1
	if i != last {
		l.pend[i] = l.pend[last]
		l.recs.at(l.pend[i].slot).pend = int32(i + 1)
	}
	l.pend[last] = pendingChange{}
	l.pend = l.pend[:last]
	r.pend = 0
	if c := cap(l.pend); c > mapshrink.Floor && len(l.pend) < l.pendPeak/8 && l.reserved == 0 {
		l.pend = append(make([]pendingChange, 0, 2*len(l.pend)), l.pend...)
		l.pendPeak = len(l.pend)
	}
	l.signal()
}

// signal wakes the waiters of WaitForRevision.
func (l *ledger[T]) signal() {
	if l.progress != nil {
		close(l.progress)
		l.progress = nil
	}
}

// progressed returns a channel closed at the next pending change covered
// or dropped.
func (l *ledger[T]) progressed() <-chan struct{} {
	if l.progress == nil {
		l.progress = make(chan struct{})
	}
	return l.progress
}

// setError records err as r's last error text, or clears it.
func (l *ledger[T]) setError(r *record, err error) {
	switch {
	case err != nil:
		r.flags |= failed
		l.errs[r.key] = err.Error()
		mapshrink.Note(l.errs, &l.errsPeak)
	case r.has(failed):
		r.flags &^= failed
		forgetKey(&l.errs, &l.errsPeak, r.key)
	}
}

// setFailing adds r to the keys whose failures count for the stale alarm,
// or takes it out.
func (l *ledger[T]) setFailing(r *record, on bool) {
	switch {
	case on && !r.has(failingKey):
		r.flags |= failingKey
		l.failing[r.key] = struct{}{}
		mapshrink.Note(l.failing, &l.failingPeak)
	case !on && r.has(failingKey):
		r.flags &^= failingKey
		forgetKey(&l.failing, &l.failingPeak, r.key)
	}
}

// forgetLast drops r's last reconcile and what hangs on it.
func (l *ledger[T]) forgetLast(r *record) {
	if r.has(reconciled) {
		l.lastCount--
	}
	l.setError(r, nil)
	l.setFailing(r, false)
	flags := r.flags &^ reconciled
	key, pend := r.key, r.pend
	*r = record{key: key, pend: pend, flags: flags}
}

// release lets r go if it holds nothing any more: the one place where a
// key's record is forgotten.
func (l *ledger[T]) release(r *record) {
	if r.pend != 0 || r.flags != 0 {
		return
	}
	if len(l.traces) > 0 {
		l.traceReleased(r.key)
	}
	l.recs.remove(r.key)
	if l.reserved == 0 && l.recs.shrinkDue() {
		l.rebuild()
	}
}

// rebuild moves the records into chunks sized to them, once most are gone
// (see records.shrinkDue), and points the pending changes at their new
// slots.
func (l *ledger[T]) rebuild() {
	moved := l.recs.compact()
	for i := range l.pend {
		l.pend[i].slot = moved[l.pend[i].slot]
	}
}

// reserve makes room for a burst of n new keys (an initial list), so that
// the index and the pending changes are sized once instead of growing
// through every rehash. Every one of those keys gets a pending change,
// then a last reconcile. The room is kept until observe has seen n more
// changes (batchObserved).
func (l *ledger[T]) reserve(n int) {
	if n <= mapshrink.Floor {
		return
	}
	l.reserved = max(l.reserved, n)
	if len(l.pend) == 0 {
		l.pend = make([]pendingChange, 0, n)
		l.pendPeak = max(l.pendPeak, n)
	}
	l.recs.reserve(n)
}

// keys reports the number of keys with a record.
func (l *ledger[T]) keys() int { return len(l.recs.index) }

// newWalk returns the number of a new Inspect walk: the walk marks the
// records it meets with it (record.walk), so that a key met twice is
// counted once without a set of the keys met. When the numbers wrap
// around, every mark is cleared.
func (l *ledger[T]) newWalk() uint32 {
	l.walks++
	if l.walks == 0 {
		l.recs.each(func(r *record) { r.walk = 0 })
		l.walks = 1
	}
	return l.walks
}

// eachPendingRecord calls fn for the record of every key with a pending
// change.
func (l *ledger[T]) eachPendingRecord(fn func(r *record)) {
	for i := range l.pend {
		fn(l.recs.at(l.pend[i].slot))
	}
}

// shrunk returns m, or a copy of m sized to its entries once they have
// fallen to an eighth of *peak (then the new peak).
func shrunk[V any](m map[string]V, peak *int) map[string]V {
	return mapshrink.Shrunk(m, peak, mapshrink.Floor)
}

// forgetKey deletes key from a side table and rebuilds the table once it
// has fallen to an eighth of its peak (mapshrink), so that a burst's memory
// goes back to the heap.
func forgetKey[V any](m *map[string]V, peak *int, key string) {
	delete(*m, key)
	*m = mapshrink.Shrunk(*m, peak, mapshrink.Floor)
}
