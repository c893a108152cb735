package reconciletest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile"
	"github.com/google/go-cmp/cmp"
)

// Controller is what Env needs of a controller; *reconcile.Controller[T]
// implements it for every T.
type Controller interface {
	Name() string
	Run(ctx context.Context) error
	WaitForSync(ctx context.Context) error
	Snapshot() []reconcile.KeyState
	EnqueueAll()
	Health() reconcile.Health
}

// writeCounter is what Env needs of a wrapped store.
type writeCounter interface {
	Writes() int64
}

// Counts are what a Converge call observed.
type Counts struct {
	// Reconciles, Errors (transient, terminal and panics), Panics and
	// Conflicts are counted through Env.Metrics.
	Reconciles, Errors, Panics, Conflicts int64
	// Writes counts the successful writes to stores wrapped with Wrap.
	Writes int64
}

func (c Counts) sub(o Counts) Counts {
	return Counts{
		Reconciles: c.Reconciles - o.Reconciles, Errors: c.Errors - o.Errors,
		Panics: c.Panics - o.Panics, Conflicts: c.Conflicts - o.Conflicts, Writes: c.Writes - o.Writes,
	}
}

// Env runs controllers in a synctest bubble. Create it inside the bubble's
// function with NewEnv; the controllers it starts are stopped, and waited
// for, when the test ends.
type Env struct {
	t           testing.TB
	metrics     *Metrics
	reported    Counts // totals at the end of the last Converge
	mu          sync.Mutex
	stores      []writeCounter
	controllers []*running
}

type running struct {
	c      Controller
	cancel context.CancelFunc
	done   chan error
}

// NewEnv returns an Env for t, which must be the *testing.T of a
// synctest.Test bubble.
func NewEnv(t testing.TB) *Env {
	e := &Env{t: t, metrics: &Metrics{}}
	t.Cleanup(e.stopAll)
	return e
}

// Metrics returns the reconcile.Metrics to pass in reconcile.Options so that
// Converge can count reconciles; it is shared by every controller of e.
func (e *Env) Metrics() *Metrics { return e.metrics }

// Start runs c until Stop or the end of the test, and waits until its cache
// has synced.
func (e *Env) Start(c Controller) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{c: c, cancel: cancel, done: make(chan error, 1)}
	runErr := make(chan error, 1)
	go func() {
		err := c.Run(ctx)
		runErr <- err
		r.done <- err
	}()
	e.mu.Lock()
	e.controllers = append(e.controllers, r)
	e.mu.Unlock()
	synced := make(chan error, 1)
	go func() { synced <- c.WaitForSync(ctx) }()
	select {
	case err := <-synced:
		if err != nil {
			e.t.Fatalf("controller %s did not sync: %v", c.Name(), err)
		}
	case err := <-runErr:
		cancel()
		<-synced
		e.t.Fatalf("controller %s: Run returned %v before its cache synced", c.Name(), err)
	}
}

// Stop stops c (as a process exit would) and waits for Run to return.
func (e *Env) Stop(c Controller) {
	e.t.Helper()
	e.mu.Lock()
	var r *running
	for i, x := range e.controllers {
		if x.c == c {
			r = x
			e.controllers = append(e.controllers[:i], e.controllers[i+1:]...)
			break
		}
	}
	e.mu.Unlock()
	if r == nil {
		e.t.Fatalf("controller %s is not running in this Env", c.Name())
		return
	}
	e.metrics.release()
	r.cancel()
	if err := <-r.done; err != nil {
		e.t.Errorf("controller %s: Run returned %v", c.Name(), err)
	}
}

func (e *Env) stopAll() {
	e.metrics.release()
	e.mu.Lock()
	rs := e.controllers
	e.controllers = nil
	e.mu.Unlock()
	for _, r := range rs {
		r.cancel()
		if err := <-r.done; err != nil {
			e.t.Errorf("controller %s: Run returned %v", r.c.Name(), err)
		}
	}
}

func (e *Env) counts() Counts {
	c := e.metrics.counts()
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range e.stores {
		c.Writes += s.Writes()
	}
	return c
}

// Converge lets the running controllers work until they are idle: no key
// waiting or being reconciled, no controller degraded (every cache
// following its store), and no delayed key due within horizon (a key polled
// forever, or backing off beyond the horizon, does not keep Converge
// running). Fake time advances to each due key in turn. It returns what
// happened since the previous Converge (or since NewEnv), and fails the test
// if the system is not idle after a thousand horizons (for example, because
// a store stays down).
func (e *Env) Converge(horizon time.Duration) Counts {
	e.t.Helper()
	deadline := time.Now().Add(1000 * horizon)
	for {
		synctest.Wait()
		next, idle := e.idle(horizon)
		if idle {
			now := e.counts()
			e.mu.Lock()
			defer e.mu.Unlock()
			delta := now.sub(e.reported)
			e.reported = now
			return delta
		}
		if n := e.metrics.overBudget(); n > 0 {
			e.t.Fatalf("controllers did not go idle within %d reconciles: a reconcile that changes nothing must make no event that wakes a key again", n)
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("controllers did not converge within %v of fake time", 1000*horizon)
		}
		<-time.After(next)
	}
}

// idle reports whether nothing is due within horizon, and otherwise how
// long until the next thing that is.
func (e *Env) idle(horizon time.Duration) (time.Duration, bool) {
	e.mu.Lock()
	rs := append([]*running(nil), e.controllers...)
	e.mu.Unlock()
	now := time.Now()
	// A degraded cache retries on a backoff timer Env cannot see: step
	// time forward in small increments until it is following again.
	const step = 50 * time.Millisecond
	next := time.Duration(-1)
	busy := false
	for _, r := range rs {
		if len(r.c.Health().Degraded) > 0 {
			busy = true
			next = step
		}
		for _, k := range r.c.Snapshot() {
			switch k.State {
			case queue.Waiting, queue.Processing:
				busy = true
			case queue.Delayed:
				if d := k.Until.Sub(now); d <= horizon {
					busy = true
					if next < 0 || d < next {
						next = d
					}
				}
			}
		}
	}
	if !busy {
		return 0, true
	}
	if next <= 0 {
		// Work in flight, blocked on a timer of its own (injected latency,
		// a timeout): wait a step; fake time jumps to that timer first.
		next = step
	}
	return next, false
}

// CheckIdempotent re-enqueues every key of every running controller, runs
// them to idle again (see Converge), and fails the test with a cmp.Diff if
// any wrapped store was written or if world, a snapshot of the actual world
// the reconcilers act on (nil to skip), changed. A reconcile that finds
// nothing to change must change nothing.
func (e *Env) CheckIdempotent(horizon time.Duration, world func() any) {
	e.t.Helper()
	e.Converge(horizon)
	var before any
	if world != nil {
		before = world()
	}
	e.mu.Lock()
	for _, r := range e.controllers {
		r.c.EnqueueAll()
	}
	e.mu.Unlock()
	counts := e.Converge(horizon)
	if counts.Writes != 0 {
		e.t.Errorf("not idempotent: reconciling converged keys again made %d store writes", counts.Writes)
	}
	if world != nil {
		if diff := cmp.Diff(before, world()); diff != "" {
			e.t.Errorf("not idempotent: reconciling converged keys again changed the world (-before +after):\n%s", diff)
		}
	}
}

// Metrics counts reconciles for Env; pass it in reconcile.Options.Metrics.
type Metrics struct {
	reconciles, errors, panics, conflicts atomic.Int64
	budget                                budget
}

var _ reconcile.Metrics = (*Metrics)(nil)

// Reconciled counts a reconcile, and whether it failed (terminal failures
// and panics included), panicked or conflicted.
func (m *Metrics) Reconciled(_ string, o reconcile.Outcome, _ time.Duration) {
	m.budget.spend(m.reconciles.Add(1))
	if o.Failed() {
		m.errors.Add(1)
	}
	switch o {
	case reconcile.Panicked:
		m.panics.Add(1)
	case reconcile.Conflict:
		m.conflicts.Add(1)
	}
}

// Converged is not recorded.
func (m *Metrics) Converged(string, time.Duration) {}

// WriteRejected is not recorded.
func (m *Metrics) WriteRejected(string) {}

// KeyRefused is not recorded.
func (m *Metrics) KeyRefused(string) {}

func (m *Metrics) counts() Counts {
	return Counts{Reconciles: m.reconciles.Load(), Errors: m.errors.Load(), Panics: m.panics.Load(), Conflicts: m.conflicts.Load()}
}
