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
// zero Faults inject nothing. Outages (SetDown) and watch breaks
// (BreakWatches) can also be triggered on demand.
type Store[T any] struct {
	inner  store.Store[T]
	faults Faults
	writes atomic.Int64

	mu       sync.Mutex
	rng      *rand.Rand
	down     bool
	watchers map[*faultWatcher[T]]struct{}
}

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
		watchers: make(map[*faultWatcher[T]]struct{}),
	}
}

// Inner returns the wrapped store, to act behind the faults' back (for
// example, to change desired state during an outage).
func (s *Store[T]) Inner() store.Store[T] { return s.inner }

// Writes returns the number of successful writes made through s.
func (s *Store[T]) Writes() int64 { return s.writes.Load() }

// SetDown starts (true) or ends (false) an outage: while down, every call
// fails with store.ErrUnavailable and every watch is broken.
func (s *Store[T]) SetDown(down bool) {
	s.mu.Lock()
	s.down = down
	s.mu.Unlock()
	if down {
		s.BreakWatches()
	}
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
	down := s.down
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
	switch {
	case down:
		return fmt.Errorf("%w: injected outage", store.ErrUnavailable)
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

// Watch watches through the faults: the watch may be refused, and breaks
// after about BreakWatchEvery events, on BreakWatches, and on SetDown(true).
func (s *Store[T]) Watch(ctx context.Context, prefix string, after int64) (store.Watcher[T], error) {
	if err := s.fault(ctx, false); err != nil {
		return nil, err
	}
	inner, err := s.inner.Watch(ctx, prefix, after)
	if err != nil {
		return nil, err
	}
	limit := -1
	if n := s.faults.BreakWatchEvery; n > 0 {
		s.mu.Lock()
		limit = n/2 + s.rng.IntN(n+1)
		s.mu.Unlock()
	}
	w := &faultWatcher[T]{inner: inner, limit: limit, events: make(chan store.Event[T]),
		broken: make(chan struct{}), stopped: make(chan struct{}), done: make(chan struct{})}
	s.mu.Lock()
	s.watchers[w] = struct{}{}
	down := s.down // an outage that began while the watch was opened
	s.mu.Unlock()
	if down {
		w.breakOff()
	}
	go w.forward(func() {
		s.mu.Lock()
		delete(s.watchers, w)
		s.mu.Unlock()
	})
	return w, nil
}

type faultWatcher[T any] struct {
	inner    store.Watcher[T]
	limit    int // events before breaking; -1 for never
	events   chan store.Event[T]
	broken   chan struct{} // closed to inject a break
	once     sync.Once
	stopped  chan struct{} // closed by Stop: the watch ends with nil
	stopOnce sync.Once
	done     chan struct{}
	err      error
}

func (w *faultWatcher[T]) forward(unregister func()) {
	defer close(w.done)
	defer close(w.events)
	defer unregister()
	defer w.inner.Stop()
	brokenErr := fmt.Errorf("%w: injected watch break", store.ErrUnavailable)
	for {
		if w.limit == 0 {
			w.err = brokenErr
			return
		}
		select {
		case ev, ok := <-w.inner.Events():
			if !ok {
				w.err = w.inner.Err()
				return
			}
			select {
			case w.events <- ev:
				if w.limit > 0 {
					w.limit--
				}
			case <-w.broken:
				w.err = brokenErr
				return
			case <-w.stopped:
				return
			}
		case <-w.broken:
			w.err = brokenErr
			return
		case <-w.stopped:
			return
		}
	}
}

func (w *faultWatcher[T]) breakOff() { w.once.Do(func() { close(w.broken) }) }

// Events delivers the inner watch's events until the watch ends.
func (w *faultWatcher[T]) Events() <-chan store.Event[T] { return w.events }

// Err says why the watch ended; valid once Events is closed.
func (w *faultWatcher[T]) Err() error {
	<-w.done
	return w.err
}

// Stop ends the watch, with a nil Err.
func (w *faultWatcher[T]) Stop() {
	w.stopOnce.Do(func() { close(w.stopped) })
	<-w.done
}
