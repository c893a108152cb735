package reconcile

import "github.com/converge-go/converge/reconcile/tracing"

// keyTrace is what the ledger keeps of a key for Options.Tracer (a side
// table, ledger.traces, empty while the controller has no Tracer): the
// causes of its changes that no settled reconcile has covered yet, oldest
// first (at most tracing.MaxCauses: the oldest and the latest ones), and the trace
// ID of its latest traced reconcile.
//
// Invariants: an entry holds a cause or a trace ID; a trace ID is kept
// only while the key has a record (release drops the entry), causes only
// until a settled reconcile of the same store covers them, the key is
// dropped or the store replaced. So the table follows the keys alive.
type keyTrace struct {
	causes []tracing.Cause
	last   string
}

// causeSeen records the cause of a change of key at rev, seen at now,
// that observe kept (it wakes the key).
func (l *ledger[T]) causeSeen(key string, rev int64, cause string, now monoTime) {
	if l.traces == nil {
		l.traces = make(map[string]*keyTrace)
	}
	kt := l.traces[key]
	if kt == nil {
		kt = &keyTrace{}
		l.traces[key] = kt
	}
	c := tracing.Cause{Revision: rev, Traceparent: cause, Seen: l.timeAt(now)}
	if len(kt.causes) == tracing.MaxCauses {
		// Keep the oldest (its latency is the key's) and the latest.
		copy(kt.causes[1:], kt.causes[2:])
		kt.causes = kt.causes[:tracing.MaxCauses-1]
	}
	kt.causes = append(kt.causes, c)
}

// causesOf returns a copy of key's uncovered causes, nil if none.
func (l *ledger[T]) causesOf(key string) []tracing.Cause {
	kt := l.traces[key]
	if kt == nil || len(kt.causes) == 0 {
		return nil
	}
	return append([]tracing.Cause(nil), kt.causes...)
}

// tracedEnded records the end of a traced reconcile of key: a settled one
// of the current store covers the causes up to the revision it was given;
// traceID becomes the key's latest, if the key still has a record.
func (l *ledger[T]) tracedEnded(e ending, traceID string) {
	kt := l.traces[e.key]
	if kt == nil {
		if traceID == "" || l.lookup(e.key) == nil {
			return
		}
		if l.traces == nil {
			l.traces = make(map[string]*keyTrace)
		}
		kt = &keyTrace{}
		l.traces[e.key] = kt
	}
	if e.outcome.Settled() && e.stores == l.stores {
		n := 0
		for _, c := range kt.causes {
			if c.Revision > e.revision {
				kt.causes[n] = c
				n++
			}
		}
		clear(kt.causes[n:])
		kt.causes = kt.causes[:n]
	}
	if l.lookup(e.key) != nil {
		kt.last = traceID
	} else {
		kt.last = ""
	}
	l.dropTraceIfEmpty(e.key, kt)
}

// dropTraceIfEmpty lets key's entry go once it holds nothing.
func (l *ledger[T]) dropTraceIfEmpty(key string, kt *keyTrace) {
	if len(kt.causes) == 0 && kt.last == "" {
		delete(l.traces, key)
	}
}

// traceReleased forgets the trace ID of a key whose record goes; its
// uncovered causes stay (a pending change keeps the record, so there are
// none unless a reconcile is in flight).
func (l *ledger[T]) traceReleased(key string) {
	if kt := l.traces[key]; kt != nil {
		kt.last = ""
		l.dropTraceIfEmpty(key, kt)
	}
}

// tracesDropped forgets everything traced of key (ledger.dropped).
func (l *ledger[T]) tracesDropped(key string) { delete(l.traces, key) }

// traceOf returns the trace ID of key's latest traced reconcile.
func (l *ledger[T]) traceOf(key string) string {
	if kt := l.traces[key]; kt != nil {
		return kt.last
	}
	return ""
}

// storeReplacedTraces forgets every cause: they are revisions of the
// store replaced.
func (l *ledger[T]) storeReplacedTraces() {
	for key, kt := range l.traces {
		kt.causes = nil
		l.dropTraceIfEmpty(key, kt)
	}
}
