package main

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/converge-go/converge/lock"
)

// Term is one term of leadership of a replica: from the moment its Locker
// handed it the lock to the moment the replica gave the lock up or learnt
// that it was lost.
type Term struct {
	// Replica names the leader.
	Replica string
	// Token is the term's fencing token (the lease record's CreateRevision).
	Token int64
	// Start is when Acquire returned the lock.
	Start time.Time
	// End is when the lock's context was cancelled or the lock released,
	// whichever came first; zero while the term lasts.
	End time.Time

	// lock is the term's lock, for writes made on the term's behalf
	// outside its controller (lock.Fenced).
	lock lock.Lock
}

// terms records every term of every replica, in start order. It is safe
// for concurrent use.
type terms struct {
	onStart, onEnd func(Term) // narration; called without the lock held

	mu   sync.Mutex
	list []*Term
}

// begin records the start of the term of lk held by replica. Its end is
// recorded when lk's context is cancelled or when lk is released, whichever
// comes first; the returned record is for end.
func (ts *terms) begin(replica string, lk lock.Lock) *Term {
	t := &Term{Replica: replica, Token: lk.Token(), Start: time.Now(), lock: lk}
	ts.mu.Lock()
	ts.list = append(ts.list, t)
	started := *t
	ts.mu.Unlock()
	if ts.onStart != nil {
		ts.onStart(started)
	}
	context.AfterFunc(lk.Context(), func() { ts.end(t) })
	return t
}

// end records the end of term t, unless it is already recorded.
func (ts *terms) end(t *Term) {
	ts.mu.Lock()
	if !t.End.IsZero() {
		ts.mu.Unlock()
		return
	}
	t.End = time.Now()
	ended := *t
	ts.mu.Unlock()
	if ts.onEnd != nil {
		ts.onEnd(ended)
	}
}

// all returns a copy of every term so far, in start order.
func (ts *terms) all() []Term {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	out := make([]Term, len(ts.list))
	for i, t := range ts.list {
		out[i] = *t
	}
	return out
}

// current returns the term that has started and not ended, if any.
func (ts *terms) current() (Term, bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, t := range slices.Backward(ts.list) {
		if t.End.IsZero() {
			return *t, true
		}
	}
	return Term{}, false
}

// overlap returns the first pair of terms that were held at the same time,
// judged by the times recorded. An end is recorded when the holder sees its
// lock's context cancelled (after the cancellation itself) or releases the
// lock (after the work it led has returned), so a real overlap is never
// hidden.
func overlap(list []Term) (a, b Term, found bool) {
	sorted := slices.SortedFunc(slices.Values(list), func(x, y Term) int { return x.Start.Compare(y.Start) })
	for i := 1; i < len(sorted); i++ {
		prev := sorted[i-1]
		if prev.End.IsZero() || prev.End.After(sorted[i].Start) {
			return prev, sorted[i], true
		}
	}
	return Term{}, Term{}, false
}

// termLocker is a lock.Locker that records the terms of the Locker it
// wraps. It adds nothing to the locks: the controller fences its own writes
// with the lock the elector puts in its context.
type termLocker struct {
	lock.Locker
	replica string
	terms   *terms
}

// Acquire acquires the wrapped Locker and records the new term.
func (l *termLocker) Acquire(ctx context.Context) (lock.Lock, error) {
	lk, err := l.Locker.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return &termLock{Lock: lk, terms: l.terms, term: l.terms.begin(l.replica, lk)}, nil
}

// termLock is a lock.Lock whose release is recorded as the end of its term.
type termLock struct {
	lock.Lock
	terms *terms
	term  *Term
}

// Release records the end of the term, if its context has not ended
// already, and releases the lock. An Elector releases once the work it ran
// for the term has returned, so the end recorded is never earlier than the
// end of that work.
func (l *termLock) Release(ctx context.Context) error {
	l.terms.end(l.term)
	return l.Lock.Release(ctx)
}
