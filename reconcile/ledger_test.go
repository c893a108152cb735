package reconcile

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/tracing"
	"github.com/converge-go/converge/store"
)

// requireLedgerConsistent checks the invariants stated in ledger's doc.
func requireLedgerConsistent[T any](t *testing.T, l *ledger[T]) {
	t.Helper()
	requireTracesConsistent(t, l)
	seen := 0
	lastCount := 0
	l.recs.each(func(r *record) {
		seen++
		slot, ok := l.recs.index[r.key]
		require.True(t, ok, "record of %q not in the index", r.key)
		require.Same(t, r, l.recs.at(slot), "index of %q points elsewhere", r.key)
		require.True(t, r.pend != 0 || r.flags != 0, "empty record of %q kept", r.key)
		if r.pend != 0 {
			require.LessOrEqual(t, int(r.pend), len(l.pend), "%q points past the pending changes", r.key)
			p := l.pend[r.pend-1]
			require.Equal(t, slot, p.slot, "pending change of %q points elsewhere", r.key)
			require.LessOrEqual(t, p.first, p.latest, "%q: first after latest", r.key)
			if p.inflight && p.next != 0 {
				require.Greater(t, p.next, p.covering, "%q: next not newer than covering", r.key)
			}
			require.False(t, !p.inflight && p.touched, "%q touched while not in flight", r.key)
		}
		_, hasErr := l.errs[r.key]
		require.Equal(t, r.has(failed), hasErr, "%q: failed flag and error text disagree", r.key)
		_, isFailing := l.failing[r.key]
		require.Equal(t, r.has(failingKey), isFailing, "%q: failing flag and set disagree", r.key)
		if isFailing {
			require.NotZero(t, r.failingSince, "%q failing since never", r.key)
		}
		if r.has(reconciled) {
			lastCount++
		}
		require.False(t, !r.has(reconciled) && (r.has(failed) || r.has(failingKey)), "%q: failure kept without a last reconcile", r.key)
	})
	require.Equal(t, len(l.recs.index), seen, "index and records disagree")
	require.Equal(t, lastCount, l.lastCount, "last reconciles miscounted")
	for i, p := range l.pend {
		require.Equal(t, int32(i+1), l.recs.at(p.slot).pend, "pending change %d not pointed at by its record", i)
	}
	for _, slot := range l.recs.free {
		require.Equal(t, record{}, *l.recs.at(slot), "free slot %d not empty", slot)
	}
	require.Len(t, l.errs, len(l.errs))
}

// ledgerModel is what the ledger must keep, as plain maps, written from
// the contract (the ledger's doc and its methods'), not from its code: a
// key's pending change, in particular, is the list of the changes the key
// waits for (pendingLog), whose pendingChange fields are read off the list
// rather than kept up to date one event at a time as the ledger does.
type ledgerModel struct {
	pending      map[string]*pendingLog
	last         map[string]*record
	errs         map[string]string
	failing      map[string]bool
	conflicted   map[string]bool
	coveredAhead map[string]int64
	observed     int64
	observedKeys map[string]bool
	deleting     map[string]monoTime
	stores       uint32
	own          map[string]*ownModel
}

// ownModel is what the model keeps of the writes made through
// Request.Store to one key (ownWrite, as the controller kept it under its
// one lock, before the table had a lock and a fast path of its own).
type ownModel struct {
	inflight int
	held     []heldChange
	obj      store.Object[string]
	deleted  bool
	echoes   []int64
	stale    bool
}

func (o *ownModel) isEcho(rev int64) bool {
	for i, r := range o.echoes {
		if r == rev {
			o.echoes = o.echoes[i+1:]
			return true
		}
	}
	return false
}

// pendingLog is the model of one key's pending change: the kept changes
// not yet covered, in the order observe saw them, and the reconcile in
// flight, if one began while the key was pending. The contract it holds
// the ledger to:
//   - a kept change joins the list; one seen while a reconcile is in
//     flight counts as arriving meanwhile (touched);
//   - a settled reconcile of the current store covers the changes up to
//     the revision it was given: if none is newer, the key stops pending;
//     if some are, the key stays pending from the first change newer than
//     that revision to arrive meanwhile, or, if none arrived meanwhile
//     (newer ones were seen before it began), from the newest, as seen
//     when the reconcile ended;
//   - a reconcile that began before the key was pending covers it only
//     whole (every change at or below its revision), and an unsettled one
//     covers nothing and leaves the key out of flight;
//   - a store replaced keeps the key pending from revision 0, since its
//     oldest change was seen.
type pendingLog struct {
	seen     []seenChange
	inflight bool
	covering int64 // the revision the reconcile in flight was given
}

// seenChange is one kept change: its revision, when observe saw it, and
// whether a reconcile of its key was in flight then.
type seenChange struct {
	rev       int64
	at        monoTime
	meanwhile bool
}

// want is the pendingChange the ledger must hold for p (slot aside):
// first and since are the oldest change's, latest the newest revision,
// touched whether any arrived meanwhile, next the first to arrive
// meanwhile that is newer than covering.
func (p *pendingLog) want() pendingChange {
	w := pendingChange{first: p.seen[0].rev, since: p.seen[0].at, inflight: p.inflight}
	for _, c := range p.seen {
		w.latest = max(w.latest, c.rev)
	}
	if !p.inflight {
		return w
	}
	w.covering = p.covering
	for _, c := range p.seen {
		w.touched = w.touched || c.meanwhile
		if c.meanwhile && c.rev > p.covering && w.next == 0 {
			w.next, w.nextSince = c.rev, c.at
		}
	}
	return w
}

// cover applies a reconcile's end to p: covered says it settled on the
// current store, rev is the revision it was given, end when it returned.
// It returns when the oldest change it covered was seen (ok false if it
// covered none), whether a change arrived meanwhile, and whether the key
// still pends.
func (p *pendingLog) cover(covered bool, rev int64, end monoTime) (since monoTime, touched, ok, pends bool) {
	w := p.want()
	switch {
	case !p.inflight:
		if covered && w.latest <= rev {
			return w.since, false, true, false
		}
		return 0, false, false, true
	case !covered:
		p.inflight = false
		for i := range p.seen {
			p.seen[i].meanwhile = false
		}
		return 0, w.touched, false, true
	}
	var newer []seenChange
	for _, c := range p.seen {
		if c.rev > w.covering {
			newer = append(newer, c)
		}
	}
	if len(newer) == 0 {
		return w.since, w.touched, true, false
	}
	from := seenChange{rev: w.latest, at: end}
	if w.next != 0 {
		from = seenChange{rev: w.next, at: w.nextSince}
	}
	*p = pendingLog{seen: []seenChange{from, {rev: w.latest, at: from.at}}}
	return w.since, w.touched, true, true
}

func newLedgerModel() *ledgerModel {
	return &ledgerModel{pending: map[string]*pendingLog{}, last: map[string]*record{}, errs: map[string]string{},
		failing: map[string]bool{}, conflicted: map[string]bool{}, coveredAhead: map[string]int64{}, observedKeys: map[string]bool{},
		deleting: map[string]monoTime{}, own: map[string]*ownModel{}}
}

func (m *ledgerModel) seen(key string, rev int64) bool {
	return rev < m.observed || rev == m.observed && m.observedKeys[key]
}

func (m *ledgerModel) batch(changes []change[string]) {
	top := m.observed
	for i := range changes {
		top = max(top, changes[i].Revision())
	}
	if top > m.observed {
		m.observed, m.observedKeys = top, map[string]bool{}
	}
	for i := range changes {
		if changes[i].Revision() == top {
			m.observedKeys[changes[i].Key()] = true
		}
	}
}

func (m *ledgerModel) changed(key string, rev int64, now monoTime) {
	p := m.pending[key]
	if p == nil {
		p = &pendingLog{}
		m.pending[key] = p
	}
	p.seen = append(p.seen, seenChange{rev: rev, at: now, meanwhile: p.inflight})
}

// observe is changeObserved.
func (m *ledgerModel) observe(ch *change[string], kept bool, now monoTime) (verdict, bool) {
	key, rev := ch.Key(), ch.Revision()
	if r, ok := m.coveredAhead[key]; ok && rev <= r {
		if rev == r {
			delete(m.coveredAhead, key)
		}
		m.ownChange(ch, false)
		return drop, !ch.HasCur
	}
	if m.ownChange(ch, kept) {
		return drop, false
	}
	if !kept {
		if m.conflicted[key] {
			delete(m.conflicted, key)
			return wake, false
		}
		_, pending := m.pending[key]
		return drop, !pending && !ch.HasCur
	}
	m.changed(key, rev, now)
	return keep, false
}

// ownChange, ownObject, writeBegun and writeEnded are the ledger's, on
// the model's records of own writes.
func (m *ledgerModel) ownChange(ch *change[string], kept bool) bool {
	key, rev := ch.Key(), ch.Revision()
	o := m.own[key]
	if o == nil {
		return false
	}
	if o.inflight > 0 {
		if kept {
			o.held = append(o.held, heldChange{rev: rev, initial: ch.Initial})
		}
		return true
	}
	echo := ch.HasCur && o.isEcho(rev)
	if rev >= o.obj.Revision {
		delete(m.own, key)
	}
	return echo
}

func (m *ledgerModel) ownObject(key string, cached store.Object[string]) (store.Object[string], bool) {
	o := m.own[key]
	if o == nil || o.obj.Revision == 0 || o.obj.Revision <= cached.Revision {
		return cached, false
	}
	if o.deleted {
		last := cached
		last.Revision = o.obj.Revision
		return last, true
	}
	return o.obj, false
}

func (m *ledgerModel) writeBegun(key string) {
	o := m.own[key]
	if o == nil {
		o = &ownModel{}
		m.own[key] = o
	}
	o.inflight++
}

func (m *ledgerModel) writeEnded(key string, obj store.Object[string], deleted, ok bool, now monoTime) []heldChange {
	o := m.own[key]
	o.inflight--
	ok = ok && !o.stale
	if ok && obj.Revision > o.obj.Revision {
		o.obj, o.deleted = obj, deleted
	}
	if ok && !deleted && obj.Revision > 0 {
		o.echoes = append(o.echoes, obj.Revision)
	}
	if o.inflight > 0 {
		return nil
	}
	var wake []heldChange
	for _, h := range o.held {
		if !o.isEcho(h.rev) {
			m.changed(key, h.rev, now)
			wake = append(wake, h)
		}
	}
	o.held = nil
	if o.obj.Revision == 0 || m.seen(key, o.obj.Revision) {
		delete(m.own, key)
	}
	return wake
}

func (m *ledgerModel) begun(key string, rev int64) {
	if p := m.pending[key]; p != nil {
		p.inflight, p.covering = true, rev
		for i := range p.seen {
			p.seen[i].meanwhile = false
		}
	}
}

// replaced rebases the model on a store of another identity.
func (m *ledgerModel) replaced() {
	m.stores++
	for _, p := range m.pending {
		w := p.want()
		p.seen = []seenChange{{at: w.since, meanwhile: w.touched}}
		p.covering = 0
	}
	m.observed, m.observedKeys = 0, map[string]bool{}
	m.coveredAhead = map[string]int64{}
	for key, o := range m.own {
		if o.inflight == 0 {
			delete(m.own, key)
			continue
		}
		*o = ownModel{inflight: o.inflight, stale: true}
	}
}

func (m *ledgerModel) ended(e ending, epoch time.Time) ended {
	covered := e.outcome.Settled() && e.stores == m.stores
	converged := covered && e.outcome != TerminalFailure
	now := e.start.Add(e.elapsed)
	ahead := covered && e.revision > 0 && !m.seen(e.key, e.revision)
	if ahead {
		m.coveredAhead[e.key] = max(m.coveredAhead[e.key], e.revision)
	}
	var since monoTime
	sinceOK, touched := false, false
	if p := m.pending[e.key]; p != nil {
		var pends bool
		since, touched, sinceOK, pends = p.cover(covered, e.revision, monoTime(now.Sub(epoch)))
		if !pends {
			delete(m.pending, e.key)
		}
	}
	var res ended
	if converged && sinceOK {
		res.latency, res.ok = now.Sub(epoch.Add(time.Duration(since))), true
	}
	if covered {
		delete(m.conflicted, e.key)
		delete(m.failing, e.key)
	}
	if covered && e.deleted {
		delete(m.last, e.key)
		delete(m.errs, e.key)
		res.gone = !touched && !ahead
		return res
	}
	r := m.last[e.key]
	if r == nil {
		r = &record{}
		m.last[e.key] = r
	}
	r.code, r.at, r.duration, r.revision, r.triggers = codeOf(e.outcome), wallOf(e.start), e.elapsed, e.revision, e.why
	switch {
	case converged:
		r.success, r.failingSince = wallOf(e.start), 0
	case e.outcome.Failed() && r.failingSince == 0:
		r.failingSince = wallOf(now)
	}
	if e.outcome.Failed() {
		m.failing[e.key] = true
	}
	if res.ok {
		r.converged = res.latency
	}
	if e.err != nil {
		m.errs[e.key] = e.err.Error()
	} else {
		delete(m.errs, e.key)
	}
	return res
}

func (m *ledgerModel) deletionSeen(key string, marked bool, now monoTime) {
	if !marked {
		delete(m.deleting, key)
	} else if _, ok := m.deleting[key]; !ok {
		m.deleting[key] = now
	}
}

func (m *ledgerModel) dropped(key string) {
	delete(m.deleting, key)
	delete(m.pending, key)
	delete(m.last, key)
	delete(m.errs, key)
	delete(m.failing, key)
	delete(m.conflicted, key)
}

// requireMatches checks that l keeps exactly what m does.
func (m *ledgerModel) requireMatches(t *testing.T, l *ledger[string]) {
	t.Helper()
	keys := map[string]bool{}
	for k := range m.pending {
		keys[k] = true
	}
	for k := range m.last {
		keys[k] = true
	}
	for k := range m.conflicted {
		keys[k] = true
	}
	require.Equal(t, len(keys), l.keys(), "keys with a record")
	for key := range keys {
		r := l.lookup(key)
		require.NotNil(t, r, "no record of %q", key)
		if mp := m.pending[key]; mp != nil {
			p := l.pendingOf(r)
			require.NotNil(t, p, "%q not pending", key)
			want := mp.want()
			want.slot = p.slot
			if !want.inflight { // covering and next speak of a reconcile in flight only
				want.covering, want.next, want.nextSince = p.covering, p.next, p.nextSince
			}
			if want.next == 0 { // nextSince is when next was seen
				want.nextSince = p.nextSince
			}
			require.Equal(t, want, *p, "pending change of %q", key)
		} else {
			require.Zero(t, r.pend, "%q pending", key)
		}
		if ml := m.last[key]; ml != nil {
			require.True(t, r.has(reconciled), "%q has no last reconcile", key)
			got := *r
			got.key, got.pend, got.flags, got.walk = "", 0, 0, 0
			require.Equal(t, *ml, got, "last reconcile of %q", key)
		} else {
			require.False(t, r.has(reconciled), "%q has a last reconcile", key)
		}
		require.Equal(t, m.conflicted[key], r.has(conflicted), "conflict mark of %q", key)
		require.Equal(t, m.failing[key], r.has(failingKey), "failing mark of %q", key)
	}
	require.Equal(t, m.errs, l.errs)
	require.Equal(t, m.deleting, l.deleting)
	require.Equal(t, m.coveredAhead, l.coveredAhead)
	l.own.mu.Lock()
	require.Len(t, l.own.keys, len(m.own), "keys with records of own writes")
	require.Equal(t, int32(len(l.own.keys)), l.own.n.Load(), "own writes miscounted")
	for key, o := range m.own {
		ow := l.own.keys[key]
		require.NotNil(t, ow, "no record of the writes to %q", key)
		got := ownModel{inflight: int(ow.inflight), held: ow.heldChanges(), obj: ow.obj, deleted: ow.deleted, echoes: ow.echoes, stale: ow.stale}
		want := *o
		if len(got.echoes) == 0 {
			got.echoes = nil
		}
		if len(got.held) == 0 {
			got.held = nil
		}
		if len(want.echoes) == 0 {
			want.echoes = nil
		}
		if len(want.held) == 0 {
			want.held = nil
		}
		require.Equal(t, want, got, "writes to %q", key)
	}
	l.own.mu.Unlock()
	requireLedgerConsistent(t, l)
}

// FuzzLedger drives the ledger and its model with the same events, read
// from the input, and checks after every step that the ledger keeps what
// the model keeps and that its invariants hold: whatever the order of
// changes, hand-outs, outcomes, conflicts and drops, own writes begun,
// committed, echoed and ended (ended by writeEndedAlone where it takes
// them, by writeEnded otherwise, against a model that has only the
// latter), and across the compaction of its records after a burst.
func FuzzLedger(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13})
	f.Add([]byte{0, 0, 0, 2, 2, 2, 3, 3, 3, 1, 1, 9, 9, 9})
	f.Add([]byte{7, 0, 3, 14, 3, 255, 2, 3, 7, 7, 1, 6})
	f.Add([]byte{0, 2, 2, 2, 7, 1, 3, 2, 0, 2, 2, 2, 3, 2, 7, 1, 0, 3})
	// Own writes: an echo and a change of someone else's held during a
	// write; a write ended before its echo; two writes in flight at once;
	// a store replaced under a write in flight.
	f.Add([]byte{8, 0, 8, 1, 8, 2, 0, 0, 9, 0, 8, 0, 8, 1, 9, 0, 0, 0, 8, 0, 8, 0, 8, 1, 9, 1, 9, 0, 8, 2, 7, 1, 8, 0, 8, 1, 7, 1, 9, 0})
	// An echo let go while its write is in flight (no predicate lets it
	// through), then the write's end; reads of a written object and of a
	// written deletion; two writes ended by writeEnded.
	f.Add([]byte{8, 0, 8, 1, 8, 8, 9, 0, 8, 3, 8, 1, 9, 0, 2, 3, 8, 3, 8, 4, 9, 0, 2, 3, 8, 0, 8, 0, 8, 1, 9, 32, 9, 32})
	// A write ends while observe sorts out the batch with its echo; a
	// reconcile given a written object covers it ahead of its echo.
	f.Add([]byte{8, 0, 8, 1, 0, 128, 8, 3, 8, 1, 9, 0, 9, 0, 2, 3, 3, 9, 8, 2})
	// Changes seen while a reconcile runs, at, above and below the
	// revision it was given, then its end: the seeds that catch a fault
	// in the rule of a pending change (a change in flight not marking the
	// key touched, next taken at the covered revision, a change at the
	// covered revision left pending, a new hand-out keeping the last
	// one's next, the remainder timed from the oldest change, a reconcile
	// begun before its key pended covering part of it).
	f.Add([]byte("22z922"))
	f.Add([]byte("22z922z9"))
	f.Add([]byte("21z227"))
	f.Add([]byte("21z2!8"))
	f.Add([]byte("2&z9!c"))
	f.Add([]byte("2Bz0!02B!Z0"))
	f.Fuzz(func(t *testing.T, ops []byte) {
		epoch := time.Unix(1_000_000, 0)
		l := newLedger[string](epoch)
		m := newLedgerModel()
		rev := int64(0)
		clock := epoch
		given := map[string]int64{}        // revision each key's reconcile was given
		givenStores := map[string]uint32{} // and the ledger's store generation then
		hints := map[string]uint32{}       // the latest hint each key's change returned
		givenHints := map[string]uint32{}  // the hint each key's reconcile was handed
		outcomes := []Outcome{Success, Requeue, RequeueAfter, Failure, TerminalFailure, Conflict, Panicked, DependencyDown, AwaitingStore}
		var writes []fuzzWrite      // own writes in flight, committed or not
		var echoes []change[string] // the watch events of committed writes, not yet observed
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i], int(ops[i+1])
			key := fmt.Sprintf("k%d", arg%6)
			clock = clock.Add(time.Millisecond)
			now := l.mono(clock)
			switch op % 10 {
			case 0, 1: // a batch of changes, after the echoes of own writes committed before them
				n := 1 + arg%3
				changes := make([]change[string], n)
				for j := range changes {
					k := fmt.Sprintf("k%d", (arg+j*7)%6)
					if (arg>>j)&1 == 0 {
						rev++ // several keys may share a revision
					}
					obj := store.Object[string]{Key: k, Revision: max(rev, 1)}
					changes[j] = change[string]{Cur: obj, HasCur: (arg>>(j+3))&1 == 0, Old: obj, HadOld: true, Initial: op == 1}
				}
				changes = append(echoes, changes...)
				echoes = nil
				l.batchObserved(changes)
				if arg&128 != 0 && len(writes) > 0 {
					// A write ends while observe sorts out the batch: only
					// writeEndedAlone can (writeEnded waits for the
					// controller's mu, which observe holds), and only as if
					// it had ended before the batch.
					w := writes[0]
					if obj, ok := w.result(); l.writeEndedAlone(w.key, w.ow, obj, w.deleted, ok) {
						writes = writes[1:]
						require.Empty(t, m.writeEnded(w.key, obj, w.deleted, ok, now), "an end that wakes a change was taken alone")
					}
				}
				m.batch(changes)
				for j := range changes {
					marked := changes[j].HasCur && (arg>>(j+6))&1 == 0
					l.deletionSeen(changes[j].Key(), marked, now)
					m.deletionSeen(changes[j].Key(), marked, now)
					kept := (arg>>(j+5))&1 == 0
					v, hint, gone := l.changeObserved(&changes[j], kept, now)
					if hint != 0 {
						hints[changes[j].Key()] = hint
					}
					if v == keep && (arg>>j)&2 == 0 { // as observe does with a Tracer
						l.causeSeen(changes[j].Key(), changes[j].Revision(), "cause", now)
					}
					mv, mgone := m.observe(&changes[j], kept, now)
					require.Equal(t, mv, v, "verdict")
					require.Equal(t, mgone, gone, "unwanted")
				}
			case 2: // a reconcile begins, with its key's latest hint (stale
				// after a drop, a reuse or a compaction), another's, or none
				cached := store.Object[string]{Key: key, Revision: rev - int64(arg%2)}
				hint := uint32(0)
				switch arg % 3 {
				case 1:
					hint = hints[key]
				case 2:
					hint = uint32(arg * 37)
				}
				obj, deleted := l.reconcileBegun(key, hint, cached, true)
				givenHints[key] = hint
				want, wantDeleted := m.ownObject(key, cached)
				require.Equal(t, want, obj, "the object a reconcile of %q is given", key)
				require.Equal(t, wantDeleted, deleted, "whether a reconcile of %q is a deletion", key)
				m.begun(key, obj.Revision)
				given[key], givenStores[key] = obj.Revision, l.stores
			case 3, 4: // a reconcile ends
				e := ending{key: key, hint: givenHints[key], revision: given[key], stores: givenStores[key], deleted: arg&64 != 0, outcome: outcomes[arg%len(outcomes)],
					why: trigger(arg), start: clock, elapsed: time.Duration(arg) * time.Microsecond}
				if e.outcome.Failed() {
					e.err = errors.New("failed " + key)
				}
				res := l.reconcileEnded(e)
				require.Equal(t, m.ended(e, epoch), res, "what the end of %q reports", key)
				l.tracedEnded(e, "trace of "+key)
			case 5:
				l.writeConflicted(key)
				m.conflicted[key] = true
			case 6:
				if arg%2 == 0 {
					l.conflictResolved(key)
					delete(m.conflicted, key)
				} else {
					l.dropped(key)
					m.dropped(key)
				}
			case 7: // a store of another identity, or a burst of keys, mostly dropped again: the records compact
				if arg%16 == 1 {
					l.storeReplaced()
					m.replaced()
					break
				}
				if arg%16 != 0 {
					continue
				}
				for j := range 5000 {
					rev++
					k := fmt.Sprintf("burst%04d", j)
					l.changed(k, rev, now)
					m.changed(k, rev, now)
				}
				for j := range 4990 {
					k := fmt.Sprintf("burst%04d", j)
					l.dropped(k)
					m.dropped(k)
				}
			case 8: // an own write begins, its store commits it, or its echoes are observed
				switch arg % 3 {
				case 0:
					writes = append(writes, fuzzWrite{key: key, ow: l.writeBegun(key)})
					m.writeBegun(key)
				case 1:
					for j := range writes {
						if w := &writes[j]; w.rev == 0 {
							rev++
							w.rev, w.deleted = rev, arg&4 != 0
							obj := store.Object[string]{Key: w.key, Value: "written", Revision: rev}
							echoes = append(echoes, change[string]{Cur: obj, HasCur: !w.deleted, Old: obj, HadOld: true})
							break
						}
					}
				case 2:
					l.batchObserved(echoes)
					m.batch(echoes)
					for j := range echoes {
						kept := arg&8 == 0
						v, _, gone := l.changeObserved(&echoes[j], kept, now)
						mv, mgone := m.observe(&echoes[j], kept, now)
						require.Equal(t, mv, v, "verdict on an echo")
						require.Equal(t, mgone, gone, "unwanted")
					}
					echoes = nil
				}
			case 9: // an own write ends: written if its store committed it, else failed
				if len(writes) == 0 {
					continue
				}
				j := arg % len(writes)
				w := writes[j]
				writes = slices.Delete(writes, j, j+1)
				obj, ok := w.result()
				// writeEnded also takes ends writeEndedAlone would: a write
				// begun after writeEndedAlone refused makes them so.
				var wake []heldChange
				if arg&32 != 0 || !l.writeEndedAlone(w.key, w.ow, obj, w.deleted, ok) {
					wake = l.writeEnded(w.key, w.ow, obj, w.deleted, ok, now)
				}
				require.Equal(t, m.writeEnded(w.key, obj, w.deleted, ok, now), wake, "the changes a write's end wakes")
			}
			m.requireMatches(t, l)
		}
	})
}

// fuzzWrite is an own write FuzzLedger has begun: committed at rev (a
// deletion if deleted) once its store has made it, 0 before.
type fuzzWrite struct {
	key     string
	ow      *ownWrite[string]
	rev     int64
	deleted bool
}

// result is what the write's end records: the object written if its store
// committed it (for a deletion, its key and revision), else a failure.
func (w fuzzWrite) result() (store.Object[string], bool) {
	if w.rev == 0 {
		return store.Object[string]{}, false
	}
	if w.deleted {
		return store.Object[string]{Key: w.key, Revision: w.rev}, true
	}
	return store.Object[string]{Key: w.key, Value: "written", Revision: w.rev}, true
}

// requireTracesConsistent checks keyTrace's invariants: an entry holds a
// cause or a trace ID, at most tracing.MaxCauses causes, and a trace ID only for
// a key with a record; causes only for a key with a record (a pending
// change or a reconcile in flight keeps it).
func requireTracesConsistent[T any](t *testing.T, l *ledger[T]) {
	t.Helper()
	for key, kt := range l.traces {
		require.True(t, len(kt.causes) > 0 || kt.last != "", "empty trace entry of %q kept", key)
		require.LessOrEqual(t, len(kt.causes), tracing.MaxCauses, "causes of %q", key)
		if kt.last != "" || len(kt.causes) > 0 {
			require.NotNil(t, l.lookup(key), "trace entry of %q outlives its record", key)
		}
	}
}
