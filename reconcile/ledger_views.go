package reconcile

import (
	"strings"
	"time"
)

// The ledger's read-only walks, for Run's carry-over, WaitForRevision and
// introspection. Each costs what it walks: the pending changes, the failing
// keys, or every record.

// eachPending calls fn for every key with a pending change.
func (l *ledger[T]) eachPending(fn func(key string, p *pendingChange)) {
	for i := range l.pend {
		p := &l.pend[i]
		fn(l.recs.at(p.slot).key, p)
	}
}

// pendingKeys returns the keys with a pending change.
func (l *ledger[T]) pendingKeys() []string {
	keys := make([]string, 0, len(l.pend))
	l.eachPending(func(key string, _ *pendingChange) { keys = append(keys, key) })
	return keys
}

// pendingUpTo reports whether some key has a pending change at or below
// rev.
func (l *ledger[T]) pendingUpTo(rev int64) bool {
	for i := range l.pend {
		if l.pend[i].first <= rev {
			return true
		}
	}
	return false
}

// unsettled returns the keys whose latest reconcile did not settle (it
// failed, panicked or conflicted): they are owed a retry.
func (l *ledger[T]) unsettled() []string {
	var keys []string
	l.recs.each(func(r *record) {
		if r.has(reconciled) && !r.outcome().Settled() {
			keys = append(keys, r.key)
		}
	})
	return keys
}

// awaiting returns the keys whose latest hand-out waited for the store
// (AwaitingStore).
func (l *ledger[T]) awaiting() []string {
	var keys []string
	code := codeOf(AwaitingStore)
	l.recs.each(func(r *record) {
		if r.has(reconciled) && r.code == code {
			keys = append(keys, r.key)
		}
	})
	return keys
}

// stale counts the keys out of date since before limit (a change not
// converged, or failing) and returns the first max of them in key order.
func (l *ledger[T]) stale(limit time.Time, max int) (int, []string) {
	first := pageHeap[string]{cmp: strings.Compare, max: max}
	n := 0
	monoLimit := l.mono(limit)
	for i := range l.pend {
		if l.pend[i].since < monoLimit {
			n++
			first.offer(l.recs.at(l.pend[i].slot).key)
		}
	}
	wallLimit := wallOf(limit)
	for key := range l.failing {
		r := l.lookup(key)
		if r.failingSince >= wallLimit {
			continue
		}
		if p := l.pendingOf(r); p != nil && p.since < monoLimit {
			continue // counted above
		}
		n++
		first.offer(key)
	}
	return n, first.sorted()
}

// describe fills s with what the ledger knows of s.Key: its latest
// reconcile and its oldest pending change; a key out of date since before
// limit is stale. It returns what woke the key for its latest reconcile,
// which the caller names.
func (l *ledger[T]) describe(s *KeyState, limit time.Time) (lastTriggers trigger) {
	r := l.lookup(s.Key)
	if r == nil {
		return 0
	}
	if r.has(reconciled) {
		s.LastOutcome, s.LastAt, s.LastDuration, s.LastRevision = r.outcome(), r.at.time(), r.duration, r.revision
		lastTriggers = r.triggers
		s.LastSuccess, s.FailingSince, s.LastConvergence = r.success.time(), r.failingSince.time(), r.converged
		s.Stale = r.failingSince != 0 && s.FailingSince.Before(limit)
		if r.has(failed) {
			s.LastError = l.errs[s.Key]
		}
	}
	if p := l.pendingOf(r); p != nil {
		s.PendingSince = l.timeAt(p.since)
		s.Stale = s.Stale || s.PendingSince.Before(limit)
	}
	if since, ok := l.deleting[s.Key]; ok {
		s.DeletingSince = l.timeAt(since)
	}
	if len(l.traces) > 0 {
		s.TraceID = l.traceOf(s.Key)
	}
	return lastTriggers
}
