package faultstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/converge-go/converge/internal/ctxtime"
	"github.com/converge-go/converge/store"
)

// Options configure a Store. The zero Options inject nothing.
type Options struct {
	// Rates are random faults drawn from Rand.
	Rates Rates
	// Rand is the generator Rates draw from; the Store owns it from then
	// on. Nil means a generator seeded with 0. Within a testing/synctest
	// bubble a seed makes a run reproducible, scheduling aside.
	Rand *rand.Rand
	// Plan, if set, decides every call instead of Rates (setting both is
	// invalid).
	Plan Plan
	// Sleep waits d or until ctx ends, returning ctx's error then. Nil
	// means a timer of package time, which is the fake clock inside a
	// testing/synctest bubble. Every Delay and Pause goes through it.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Store is a store.Store that injects faults into the calls it passes to
// the store it wraps. It is safe for concurrent use.
type Store[T any] struct {
	inner  store.Store[T]
	sleep  func(ctx context.Context, d time.Duration) error
	writes atomic.Int64

	mu       sync.Mutex
	rates    Rates
	rng      *rand.Rand
	plan     Plan
	outage   Outage
	changed  chan struct{} // closed and replaced when the outage changes
	watchers map[*watcher[T]]struct{}
}

var (
	_ store.Store[int]   = (*Store[int])(nil)
	_ store.Encoded[int] = (*Store[int])(nil)
	_ store.Identifier   = (*Store[int])(nil)
	_ store.Checker      = (*Store[int])(nil)
)

// New returns a Store over inner, up, injecting what o says. A nil inner,
// invalid Rates, or both Rates and a Plan return an error matching
// store.ErrInvalid.
func New[T any](inner store.Store[T], o Options) (*Store[T], error) {
	if inner == nil {
		return nil, fmt.Errorf("%w: faultstore: nil store", store.ErrInvalid)
	}
	if err := o.Rates.check(); err != nil {
		return nil, err
	}
	if o.Plan != nil && o.Rates != (Rates{}) {
		return nil, fmt.Errorf("%w: faultstore: both Rates and a Plan", store.ErrInvalid)
	}
	s := &Store[T]{
		inner: inner, sleep: o.Sleep, rates: o.Rates, rng: o.Rand, plan: o.Plan,
		changed: make(chan struct{}), watchers: make(map[*watcher[T]]struct{}),
	}
	if s.sleep == nil {
		s.sleep = ctxtime.Sleep
	}
	if s.rng == nil {
		s.rng = rand.New(rand.NewPCG(0, 0))
	}
	return s, nil
}

// Inner returns the wrapped store, to act behind the faults' back (for
// example, to change desired state during an outage, as another client
// still reaching the store would).
func (s *Store[T]) Inner() store.Store[T] { return s.inner }

// Writes returns the number of writes made through s that the wrapped
// store applied (lost responses included). An Update answered with the
// revision it was given changed nothing (the API-server layer's answer to
// a write that would store what is stored) and is not counted.
func (s *Store[T]) Writes() int64 { return s.writes.Load() }

// Codec returns the wrapped store's codec if it says which
// (store.Encoded), else store.JSON, which is what a consumer assumes of a
// store that does not say.
func (s *Store[T]) Codec() store.Codec[T] {
	if e, ok := s.inner.(store.Encoded[T]); ok {
		return e.Codec()
	}
	return store.JSON[T]{}
}

// SetPlan makes p decide every call from now on; nil goes back to the
// Rates.
func (s *Store[T]) SetPlan(p Plan) {
	s.mu.Lock()
	s.plan = p
	s.mu.Unlock()
}

// SetRates replaces the Rates (the generator goes on), for example with
// the zero Rates to stop injecting faults before checking that a system
// converged. It leaves a Plan and an outage as they are. Invalid Rates
// return an error matching store.ErrInvalid and change nothing.
func (s *Store[T]) SetRates(r Rates) error {
	if err := r.check(); err != nil {
		return err
	}
	s.mu.Lock()
	s.rates = r
	s.mu.Unlock()
	return nil
}

// BreakWatches ends every open watch with store.ErrUnavailable.
func (s *Store[T]) BreakWatches() {
	s.mu.Lock()
	ws := s.watchers
	s.watchers = make(map[*watcher[T]]struct{})
	s.mu.Unlock()
	for w := range ws {
		w.breakOff()
	}
}

// Compact compacts the wrapped store's history, without faults, if it has
// a Compact(ctx, rev) method; otherwise it returns an error matching
// store.ErrInvalid.
func (s *Store[T]) Compact(ctx context.Context, rev int64) error {
	c, ok := s.inner.(interface {
		Compact(ctx context.Context, rev int64) error
	})
	if !ok {
		return fmt.Errorf("%w: faultstore: the wrapped store cannot compact", store.ErrInvalid)
	}
	return c.Compact(ctx, rev)
}

// decide returns the decision for c.
func (s *Store[T]) decide(c Call) Decision {
	s.mu.Lock()
	p := s.plan
	if p == nil {
		defer s.mu.Unlock()
		return s.rates.draw(s.rng, c)
	}
	s.mu.Unlock()
	return p(c)
}

// enter runs a call's decision up to the point where the call would reach
// the store: it returns the context to call the store with, and the
// decision's remaining Fault, or the error that fails the call there.
func (s *Store[T]) enter(ctx context.Context, c Call) (context.Context, Decision, error) {
	d := s.decide(c)
	if d.Pause > 0 {
		_ = s.sleep(context.WithoutCancel(ctx), d.Pause)
		ctx = context.WithoutCancel(ctx)
	}
	if d.Delay > 0 {
		if err := s.sleep(ctx, d.Delay); err != nil {
			return ctx, d, notSent(c.Op, err, "delay")
		}
	}
	for {
		outage, changed := s.state()
		if outage == Up {
			break
		}
		if outage != SilentHang {
			return ctx, d, notSent(c.Op, store.ErrUnavailable, outage.String()+" outage")
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx, d, notSent(c.Op, ctx.Err(), "SilentHang outage")
		}
	}
	switch {
	case d.Fault == Fail, d.Fault == Lose && c.Op&OpWrites == 0:
		return ctx, d, notSent(c.Op, store.ErrUnavailable, "error")
	case d.Fault == Conflict && c.Op&(OpUpdate|OpDelete) != 0:
		return ctx, d, notSent(c.Op, store.ErrConflict, "conflict")
	case d.Fault == Compacted && c.Op == OpWatch:
		return ctx, d, notSent(c.Op, store.ErrCompacted, "compaction")
	}
	return ctx, d, nil
}

// Get reads through the faults.
func (s *Store[T]) Get(ctx context.Context, key string) (store.Object[T], error) {
	ctx, _, err := s.enter(ctx, Call{Op: OpGet, Key: key})
	if err != nil {
		return store.Object[T]{}, err
	}
	return s.inner.Get(ctx, key)
}

// List reads through the faults.
func (s *Store[T]) List(ctx context.Context, prefix string) ([]store.Object[T], int64, error) {
	ctx, _, err := s.enter(ctx, Call{Op: OpList, Key: prefix})
	if err != nil {
		return nil, 0, err
	}
	return s.inner.List(ctx, prefix)
}

// Revision reads through the faults.
func (s *Store[T]) Revision(ctx context.Context) (int64, error) {
	ctx, _, err := s.enter(ctx, Call{Op: OpRevision})
	if err != nil {
		return 0, err
	}
	return s.inner.Revision(ctx)
}

// Identity reads the wrapped store's identity (store.Identifier) through
// the faults, as the call OpIdentity: it fails during an outage like every
// call. A wrapped store without an identity makes it fail with an error
// matching errors.ErrUnsupported (and store.ErrInvalid), which a
// controller takes for a store without an identity.
func (s *Store[T]) Identity(ctx context.Context) (string, error) {
	ctx, _, err := s.enter(ctx, Call{Op: OpIdentity})
	if err != nil {
		return "", err
	}
	id, ok := s.inner.(store.Identifier)
	if !ok {
		return "", fmt.Errorf("%w: %w: faultstore: the wrapped store %T has no identity", store.ErrInvalid, errors.ErrUnsupported, s.inner)
	}
	return id.Identity(ctx)
}

// Check checks key's revision and the guards in the wrapped store without
// writing (store.Checker; atomically if the wrapped store is a
// store.Checker), through the faults as the read it is: the call OpGet of
// key.
func (s *Store[T]) Check(ctx context.Context, key string, revision int64, guards ...store.Guard) error {
	ctx, _, err := s.enter(ctx, Call{Op: OpGet, Key: key})
	if err != nil {
		return err
	}
	return store.Check(ctx, s.inner, key, revision, guards...)
}

// Create writes through the faults.
func (s *Store[T]) Create(ctx context.Context, key string, v T, guards ...store.Guard) (store.Object[T], error) {
	ctx, d, err := s.enter(ctx, Call{Op: OpCreate, Key: key})
	if err != nil {
		return store.Object[T]{}, err
	}
	obj, err := s.inner.Create(ctx, key, v, guards...)
	return s.respond(d, OpCreate, obj, 0, err)
}

// Update writes through the faults.
func (s *Store[T]) Update(ctx context.Context, key string, v T, rev int64, guards ...store.Guard) (store.Object[T], error) {
	ctx, d, err := s.enter(ctx, Call{Op: OpUpdate, Key: key})
	if err != nil {
		return store.Object[T]{}, err
	}
	obj, err := s.inner.Update(ctx, key, v, rev, guards...)
	if err == nil && obj.Revision == rev {
		s.writes.Add(-1) // nothing written: respond counts it back
	}
	return s.respond(d, OpUpdate, obj, 0, err)
}

// Delete writes through the faults.
func (s *Store[T]) Delete(ctx context.Context, key string, rev int64, guards ...store.Guard) (int64, error) {
	ctx, d, err := s.enter(ctx, Call{Op: OpDelete, Key: key})
	if err != nil {
		return 0, err
	}
	r, err := s.inner.Delete(ctx, key, rev, guards...)
	_, err = s.respond(d, OpDelete, store.Object[T]{}, r, err)
	if err != nil {
		return 0, err
	}
	return r, nil
}

// respond counts a write the store applied and loses its response if d
// says so.
func (s *Store[T]) respond(d Decision, op Op, obj store.Object[T], rev int64, err error) (store.Object[T], error) {
	if err == nil {
		s.writes.Add(1)
	}
	if d.Fault == Lose {
		return store.Object[T]{}, &LostResponseError[T]{Op: op, Object: obj, Revision: rev, Err: err}
	}
	return obj, err
}
