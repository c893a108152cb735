package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/converge-go/converge/examples/replicaset/replicaset"
	"github.com/converge-go/converge/lock"
	"github.com/converge-go/converge/store"
)

// Term is one term of leadership of a replica: from the moment its Locker
// handed it the lock to the moment the replica gave the lock up or learnt
// that it was lost.
type Term struct {
	// Replica names the leader.
	Replica string
	// Token is the term's fencing token (the lease record's CreateRevision).
	Token int64
	// Guard is the store precondition that holds only while the term is
	// the current one.
	Guard store.Guard
	// Start is when Acquire returned the lock.
	Start time.Time
	// End is when the lock's context was cancelled or the lock released,
	// whichever came first; zero while the term lasts.
	End time.Time
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
	t := &Term{Replica: replica, Token: lk.Token(), Guard: lk.Guard(), Start: time.Now()}
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
// wraps and hands out locks whose context carries the term, so that every
// write made under that context (the controller's) carries the term's guard
// (see fencedStore).
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
	t := l.terms.begin(l.replica, lk)
	return &termLock{Lock: lk, ctx: withTerm(lk.Context(), *t), terms: l.terms, term: t}, nil
}

// termLock is a lock.Lock whose context carries its Term.
type termLock struct {
	lock.Lock
	ctx   context.Context
	terms *terms
	term  *Term
}

// Context returns the lock's context, with the term as a value.
func (l *termLock) Context() context.Context { return l.ctx }

// Release records the end of the term, if its context has not ended
// already, and releases the lock. An Elector releases once the work it ran
// for the term has returned, so the end recorded is never earlier than the
// end of that work.
func (l *termLock) Release(ctx context.Context) error {
	l.terms.end(l.term)
	return l.Lock.Release(ctx)
}

type termKey struct{}

// withTerm returns ctx carrying t.
func withTerm(ctx context.Context, t Term) context.Context {
	return context.WithValue(ctx, termKey{}, t)
}

// termFrom returns the term ctx carries.
func termFrom(ctx context.Context) (Term, bool) {
	t, ok := ctx.Value(termKey{}).(Term)
	return t, ok
}

// errNoTerm is returned by a fencedStore for a write whose context carries
// no term of leadership.
var errNoTerm = errors.New("write outside a term of leadership")

// fencedStore is the controller's view of the replica sets: reads pass
// through, and every write carries the guard of the term its context
// carries, so that etcd checks, in the write's own transaction, that the
// term is still the current one. A write without a term is refused.
type fencedStore struct {
	store.Store[*replicaset.ReplicaSet]
	// wrote, if set, hears each successful write.
	wrote func(Term, store.Object[*replicaset.ReplicaSet])
}

type object = store.Object[*replicaset.ReplicaSet]

// Create creates key under the term's guard.
func (f *fencedStore) Create(ctx context.Context, key string, value *replicaset.ReplicaSet, guards ...store.Guard) (object, error) {
	t, ok := termFrom(ctx)
	if !ok {
		return object{}, fmt.Errorf("create %q: %w", key, errNoTerm)
	}
	obj, err := f.Store.Create(ctx, key, value, append(slices.Clip(guards), t.Guard)...)
	f.report(t, obj, err)
	return obj, err
}

// Update updates key under the term's guard.
func (f *fencedStore) Update(ctx context.Context, key string, value *replicaset.ReplicaSet, revision int64, guards ...store.Guard) (object, error) {
	t, ok := termFrom(ctx)
	if !ok {
		return object{}, fmt.Errorf("update %q: %w", key, errNoTerm)
	}
	obj, err := f.Store.Update(ctx, key, value, revision, append(slices.Clip(guards), t.Guard)...)
	f.report(t, obj, err)
	return obj, err
}

// Delete deletes key under the term's guard.
func (f *fencedStore) Delete(ctx context.Context, key string, revision int64, guards ...store.Guard) (int64, error) {
	t, ok := termFrom(ctx)
	if !ok {
		return 0, fmt.Errorf("delete %q: %w", key, errNoTerm)
	}
	return f.Store.Delete(ctx, key, revision, append(slices.Clip(guards), t.Guard)...)
}

func (f *fencedStore) report(t Term, obj object, err error) {
	if err == nil && f.wrote != nil {
		f.wrote(t, obj)
	}
}
