package reconciletest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/converge-go/converge/reconcile"
)

// ExclusiveReconciler wraps a Reconciler and reports any key reconciled by
// two workers at once.
type ExclusiveReconciler[T any] struct {
	t          testing.TB
	inner      reconcile.Reconciler[T]
	mu         sync.Mutex
	active     map[string]int // reconciles in progress per key
	violations atomic.Int64
}

// Exclusive wraps rec so that a key reconciled by two workers at once fails
// t (with t.Errorf, so the test goes on and reports every violation).
func Exclusive[T any](t testing.TB, rec reconcile.Reconciler[T]) *ExclusiveReconciler[T] {
	return &ExclusiveReconciler[T]{t: t, inner: rec, active: make(map[string]int)}
}

// Reconcile calls the wrapped reconciler, checking that no other call for
// the same key is in progress.
func (e *ExclusiveReconciler[T]) Reconcile(ctx context.Context, req reconcile.Request[T]) (reconcile.Result, error) {
	e.mu.Lock()
	if e.active[req.Key] > 0 {
		e.violations.Add(1)
		e.t.Errorf("key %q reconciled by two workers at once", req.Key)
	}
	e.active[req.Key]++
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		if e.active[req.Key]--; e.active[req.Key] == 0 {
			delete(e.active, req.Key)
		}
		e.mu.Unlock()
	}()
	return e.inner.Reconcile(ctx, req)
}

// Violations returns how many overlapping reconciles were seen.
func (e *ExclusiveReconciler[T]) Violations() int64 { return e.violations.Load() }
