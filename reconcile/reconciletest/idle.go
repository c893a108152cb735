package reconciletest

import (
	"sync"
	"sync/atomic"
	"testing/synctest"
	"time"
)

// IdleReconcileLimit is how many reconciles CheckIdle allows the running
// controllers to reach idleness: far more than converging takes, far fewer
// than a controller that wakes itself makes in a second.
const IdleReconcileLimit = 10_000

// CheckIdle proves that the running controllers go idle once converged, as
// a controller that finds nothing to change must: its writes that change
// nothing are not stored (store.Modify, store.CreateOrUpdate, the
// API-server layer), so they make no event to wake a key again.
//
// It runs the controllers to idle (Converge) and fails the test if that
// takes more than IdleReconcileLimit reconciles from the call on: a
// controller that wakes itself for ever (an owner that writes its child
// at each reconcile and is woken by the child's change) is then stopped
// in its tracks, its workers held after their next reconcile, instead of
// running until the test times out. It then lets horizon pass on the fake
// clock twice: in the first, reconciles of changes still on their way
// may run but no store wrapped with Wrap may be written; in the second,
// no key may be reconciled at all. It ends with CheckIdempotent(horizon,
// world). horizon must be shorter than any periodic resync of the
// controllers, which would rightly reconcile every key.
func (e *Env) CheckIdle(horizon time.Duration, world func() any) {
	e.t.Helper()
	e.metrics.budget.set(e.metrics.reconciles.Load() + IdleReconcileLimit)
	defer e.metrics.budget.set(0)
	e.Converge(horizon)
	// Changes still on their way when Converge found the keys idle (a
	// watch served over HTTP delivers on a timer) may wake keys once
	// more; those reconciles find nothing to do and write nothing.
	if settle := e.after(horizon); settle.Writes != 0 {
		e.t.Errorf("not idle: in %v after converging, %d reconciles made %d store writes", horizon, settle.Reconciles, settle.Writes)
	}
	if quiet := e.after(horizon); quiet.Reconciles != 0 || quiet.Writes != 0 {
		e.t.Errorf("not idle: in %v after settling, %d reconciles and %d store writes", horizon, quiet.Reconciles, quiet.Writes)
	}
	e.CheckIdempotent(horizon, world)
}

// after lets d pass on the fake clock, runs the controllers to idle again
// and returns what happened meanwhile.
func (e *Env) after(d time.Duration) Counts {
	e.t.Helper()
	<-time.After(d)
	synctest.Wait()
	return e.Converge(d)
}

// budget bounds the reconciles a check allows: past its limit, each
// reconcile's report holds its worker until the Env releases them, so
// that a controller that never goes idle stops where Converge sees it.
type budget struct {
	limit atomic.Int64 // 0: no limit
	over  atomic.Int64 // the limit passed, 0 if not
	once  sync.Once
	gate  chan struct{} // closed by release
	mu    sync.Mutex
}

// set sets the limit (0: none) and forgets a limit passed.
func (b *budget) set(limit int64) {
	b.over.Store(0)
	b.limit.Store(limit)
}

// spend records the n-th reconcile, and holds the caller once n passes the
// limit, until release.
func (b *budget) spend(n int64) {
	limit := b.limit.Load()
	if limit == 0 || n <= limit {
		return
	}
	b.over.CompareAndSwap(0, limit)
	<-b.gateChan()
}

func (b *budget) gateChan() chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.gate == nil {
		b.gate = make(chan struct{})
	}
	return b.gate
}

// release lets every held worker go, and every later one: the end of the
// test, or of the controller.
func (b *budget) release() {
	b.once.Do(func() { close(b.gateChan()) })
}

// overBudget returns the limit passed, 0 if none was.
func (m *Metrics) overBudget() int64 { return m.budget.over.Load() }

// release lets workers held by the budget go.
func (m *Metrics) release() { m.budget.release() }
