package reconciletest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/converge-go/converge/store"
)

// Faults configures the faults a Store injects. Rates are probabilities per
// call, drawn from a generator seeded with Seed, so a run is reproducible
// (within a synctest bubble, where scheduling is the only other source of
// variation).
type Faults struct {
	Seed uint64
	// ErrorRate fails a call with store.ErrUnavailable before it reaches
	// the store (nothing is written).
	ErrorRate float64
	// ConflictRate fails an Update or Delete with store.ErrConflict before
	// it reaches the store (nothing is written).
	ConflictRate float64
	// MaxLatency delays each call by a random duration up to MaxLatency
	// (on the bubble's fake clock).
	MaxLatency time.Duration
	// BreakWatchEvery ends every watch with store.ErrUnavailable after
	// about this many events (0: never).
	BreakWatchEvery int
}

// Store wraps a store.Store with fault injection and write counting. Its
// zero Faults inject nothing. Outages (SetOutage, SetDown), watch breaks
// (BreakWatches) and fault rates (SetFaults) can also be changed on demand.
type Store[T any] struct {
	inner  store.Store[T]
	writes atomic.Int64

	mu       sync.Mutex
	faults   Faults
	rng      *rand.Rand
	outage   Outage
	changed  chan struct{} // closed and replaced when the outage changes
	watchers map[*faultWatcher[T]]struct{}
}

// Outage says how an unreachable store behaves.
type Outage uint8

const (
	// Up: no outage.
	Up Outage = iota
	// Loud: every call fails with store.ErrUnavailable and every watch ends
	// with store.ErrUnavailable, as when a connection is refused.
	Loud
	// Silent: every call fails with store.ErrUnavailable, while open
	// watches stay open, deliver nothing, do not end and leave progress
	// requests (store.ProgressRequester) unanswered, as an etcd member cut
	// off from its peers does. When the outage ends, they deliver what
	// happened meanwhile, in order, and answer the requests made during it.
	Silent
	// SilentHang is Silent, except that calls hang until their context ends
	// (returning its error) or the outage ends (then they go ahead), as
	// calls to an unreachable host do.
	SilentHang
)

// String returns the outage's name.
func (o Outage) String() string {
	switch o {
	case Up:
		return "Up"
	case Loud:
		return "Loud"
	case Silent:
		return "Silent"
	case SilentHang:
		return "SilentHang"
	}
	return fmt.Sprintf("Outage(%d)", uint8(o))
}

func (o Outage) silent() bool { return o == Silent || o == SilentHang }

var _ store.Store[int] = (*Store[int])(nil)

// Wrap returns a fault-injecting Store over inner whose writes env counts.
func Wrap[T any](env *Env, inner store.Store[T], f Faults) *Store[T] {
	s := NewStore(inner, f)
	env.mu.Lock()
	env.stores = append(env.stores, s)
	env.mu.Unlock()
	return s
}

// NewStore returns a fault-injecting Store over inner, outside any Env.
func NewStore[T any](inner store.Store[T], f Faults) *Store[T] {
	return &Store[T]{
		inner:    inner,
		faults:   f,
		rng:      rand.New(rand.NewPCG(f.Seed, f.Seed^0x9e3779b97f4a7c15)),
		changed:  make(chan struct{}),
		watchers: make(map[*faultWatcher[T]]struct{}),
	}
}

// Inner returns the wrapped store, to act behind the faults' back (for
// example, to change desired state during an outage).
func (s *Store[T]) Inner() store.Store[T] { return s.inner }

// Writes returns the number of successful writes made through s.
func (s *Store[T]) Writes() int64 { return s.writes.Load() }

// SetFaults replaces the fault rates (its Seed is ignored: the generator
// goes on), for example to stop injecting faults before checking that a
// system converged. It leaves an outage as it is.
func (s *Store[T]) SetFaults(f Faults) {
	s.mu.Lock()
	f.Seed = s.faults.Seed
	s.faults = f
	s.mu.Unlock()
}

// SetDown starts (true) a loud outage or ends (false) any outage: it is
// SetOutage(Loud) or SetOutage(Up).
func (s *Store[T]) SetDown(down bool) {
	if down {
		s.SetOutage(Loud)
		return
	}
	s.SetOutage(Up)
}

// SetOutage starts an outage of kind o, or ends the current one with Up.
// Starting a Loud outage breaks every open watch; a Silent one holds them
// back; Up lets held-back watches deliver again.
func (s *Store[T]) SetOutage(o Outage) {
	s.mu.Lock()
	s.outage = o
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	if o == Loud {
		s.BreakWatches()
	}
}

// Outage returns the current outage (Up if none).
func (s *Store[T]) Outage() Outage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.outage
}

// state returns the current outage and a channel closed when it changes.
func (s *Store[T]) state() (Outage, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.outage, s.changed
}

// BreakWatches ends every open watch with store.ErrUnavailable.
func (s *Store[T]) BreakWatches() {
	s.mu.Lock()
	ws := s.watchers
	s.watchers = make(map[*faultWatcher[T]]struct{})
	s.mu.Unlock()
	for w := range ws {
		w.breakOff()
	}
}

// Compact compacts the inner store's history if it supports it.
func (s *Store[T]) Compact(ctx context.Context, rev int64) error {
	c, ok := s.inner.(interface {
		Compact(ctx context.Context, rev int64) error
	})
	if !ok {
		return fmt.Errorf("%w: the wrapped store cannot compact", store.ErrInvalid)
	}
	return c.Compact(ctx, rev)
}

// fault draws the faults for one call: latency first, then an outage or an
// injected error. conflictable calls may also get a conflict.
func (s *Store[T]) fault(ctx context.Context, conflictable bool) error {
	s.mu.Lock()
	var delay time.Duration
	if s.faults.MaxLatency > 0 {
		delay = time.Duration(s.rng.Int64N(int64(s.faults.MaxLatency) + 1))
	}
	fail := s.faults.ErrorRate > 0 && s.rng.Float64() < s.faults.ErrorRate
	conflict := conflictable && s.faults.ConflictRate > 0 && s.rng.Float64() < s.faults.ConflictRate
	s.mu.Unlock()
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	for {
		outage, changed := s.state()
		if outage != SilentHang {
			if outage != Up {
				return fmt.Errorf("%w: injected %s outage", store.ErrUnavailable, outage)
			}
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	switch {
	case fail:
		return fmt.Errorf("%w: injected error", store.ErrUnavailable)
	case conflict:
		return fmt.Errorf("%w: injected conflict", store.ErrConflict)
	}
	return nil
}

// Get reads through the faults.
func (s *Store[T]) Get(ctx context.Context, key string) (store.Object[T], error) {
	if err := s.fault(ctx, false); err != nil {
		return store.Object[T]{}, err
	}
	return s.inner.Get(ctx, key)
}

// List reads through the faults.
func (s *Store[T]) List(ctx context.Context, prefix string) ([]store.Object[T], int64, error) {
	if err := s.fault(ctx, false); err != nil {
		return nil, 0, err
	}
	return s.inner.List(ctx, prefix)
}

// Revision reads through the faults.
func (s *Store[T]) Revision(ctx context.Context) (int64, error) {
	if err := s.fault(ctx, false); err != nil {
		return 0, err
	}
	return s.inner.Revision(ctx)
}

// Create writes through the faults.
func (s *Store[T]) Create(ctx context.Context, key string, v T, guards ...store.Guard) (store.Object[T], error) {
	if err := s.fault(ctx, false); err != nil {
		return store.Object[T]{}, err
	}
	obj, err := s.inner.Create(ctx, key, v, guards...)
	s.count(err)
	return obj, err
}

// Update writes through the faults.
func (s *Store[T]) Update(ctx context.Context, key string, v T, rev int64, guards ...store.Guard) (store.Object[T], error) {
	if err := s.fault(ctx, true); err != nil {
		return store.Object[T]{}, err
	}
	obj, err := s.inner.Update(ctx, key, v, rev, guards...)
	s.count(err)
	return obj, err
}

// Delete writes through the faults.
func (s *Store[T]) Delete(ctx context.Context, key string, rev int64, guards ...store.Guard) (int64, error) {
	if err := s.fault(ctx, true); err != nil {
		return 0, err
	}
	r, err := s.inner.Delete(ctx, key, rev, guards...)
	s.count(err)
	return r, err
}

func (s *Store[T]) count(err error) {
	if err == nil {
		s.writes.Add(1)
	}
}
