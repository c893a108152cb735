package bench

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/converge-go/converge/store"
)

// Pair is the object of the end-to-end runs: the desired value (Spec) and
// the value the reconciler last recorded (Status). Stores hold it by
// pointer and never change a stored Pair in place.
type Pair struct{ Spec, Status int }

// E2EStore is the store every end-to-end implementation reads and writes.
type E2EStore = store.Store[*Pair]

// E2EImpl names one end-to-end implementation and runs it over a store
// whose objects were made by Populate, until every object has converged
// and the loop has seen its own status write come back.
type E2EImpl struct {
	Name string
	Run  func(s E2EStore, keys []string, workers int) (E2EResult, error)
}

// E2EImpls returns the end-to-end implementations under comparison: the
// store-only baseline first, then converge, then client-go, then
// controller-runtime, then converge writing its status through
// Request.Store (so that its own writes' echoes are not reconciled).
func E2EImpls() []E2EImpl {
	return []E2EImpl{
		{Name: "store-only", Run: RunStoreOnly},
		{Name: "converge", Run: RunConverge},
		{Name: "client-go", Run: RunClientGo},
		{Name: "ctrl-runtime", Run: RunCtrlRuntime},
		{Name: "converge-own-writes", Run: RunConvergeOwnWrites},
		{Name: "converge-traced", Run: RunConvergeTraced},
		{Name: "converge-traced-1pct", Run: RunConvergeTracedOnePercent},
	}
}

// E2EResult is what one end-to-end run measured.
type E2EResult struct {
	// First is the time from the start until the first reconcile: the
	// list, filling the cache and queueing, until a worker has a key.
	First time.Duration
	// Converged is the time from the start until the last status write:
	// every object then has Status == Spec.
	Converged time.Duration
	// Settled is the time from the start until every object has also been
	// reconciled once more after its status write came back through the
	// watch (the loop is idle). For the store-only baseline it equals
	// Converged.
	Settled time.Duration
	// Reconciles counts the calls of the reconciler body until Settled
	// (Get+Update pairs for the store-only baseline).
	Reconciles int64
	// Writes counts successful status writes.
	Writes int64
	// Mallocs counts heap allocations from the start until Settled, taken
	// from runtime.MemStats (so it includes the store's own allocations).
	Mallocs uint64
	// CPU is the process's CPU time (user and system, every goroutine
	// and the runtime's) over the whole run, shutdown included; set by the
	// benchmark, not by the implementation.
	CPU time.Duration
	// Lists and Watches count the calls the implementation made of the
	// store's List and Watch: more than one Watch means a watch ended (for
	// example a lagging watcher) and was resumed, more than one List that
	// the implementation re-listed.
	Lists, Watches int64
}

// Populate creates one object per key in s with Spec = index+1 and Status
// 0, so that every object needs one status write.
func Populate(ctx context.Context, s E2EStore, keys []string) error {
	for i, key := range keys {
		if _, err := s.Create(ctx, key, &Pair{Spec: i + 1}); err != nil {
			return fmt.Errorf("populate %q: %w", key, err)
		}
	}
	return nil
}

// CheckConverged lists s and returns an error unless every object of keys
// is present with Status == Spec.
func CheckConverged(ctx context.Context, s E2EStore, keys []string) error {
	objs, _, err := s.List(ctx, "")
	if err != nil {
		return err
	}
	if len(objs) != len(keys) {
		return fmt.Errorf("%d objects in the store, want %d", len(objs), len(keys))
	}
	bad := 0
	for _, obj := range objs {
		if obj.Value.Status != obj.Value.Spec {
			bad++
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d objects have Status != Spec", bad, len(objs))
	}
	return nil
}

// tracker is the bookkeeping every implementation shares: it counts
// reconciles and status writes and detects the two end points of a run.
// Each key is counted once per end point, however often it is reconciled.
type tracker struct {
	start       time.Time
	reconciles  atomic.Int64
	writes      atomic.Int64
	seen        atomic.Int64
	written     []atomic.Bool // key index → status written
	converged   []atomic.Bool // key index → reconciled after its write came back
	firstAt     atomic.Int64  // ns after start of the first reconcile, or 0
	convergedAt atomic.Int64  // ns after start of the last status write
	settledAt   atomic.Int64  // ns after start of the last reconcile that saw its write
	allWritten  chan struct{}
	settled     chan struct{}
}

func newTracker(n int) *tracker {
	return &tracker{
		written:    make([]atomic.Bool, n),
		converged:  make([]atomic.Bool, n),
		allWritten: make(chan struct{}),
		settled:    make(chan struct{}),
	}
}

// begin starts the clock and the allocation count.
func (t *tracker) begin() (mallocs uint64) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.start = time.Now()
	return ms.Mallocs
}

// reconcile is the reconciler body every implementation runs for the
// object obj it read (from its cache, or from the store for the
// store-only baseline): if Status differs from Spec it writes Status =
// Spec with compare-and-swap against obj's revision. It returns the
// store's error, which is nil when there was nothing to write.
func (t *tracker) reconcile(ctx context.Context, s E2EStore, obj store.Object[*Pair]) error {
	if t.reconciles.Add(1) == 1 {
		t.firstAt.Store(int64(time.Since(t.start)))
	}
	i := KeyIndex(obj.Key)
	if obj.Value.Status == obj.Value.Spec {
		if t.written[i].Load() && !t.converged[i].Swap(true) && t.seen.Add(1) == int64(len(t.converged)) {
			t.settledAt.Store(int64(time.Since(t.start)))
			close(t.settled)
		}
		return nil
	}
	if _, err := s.Update(ctx, obj.Key, &Pair{Spec: obj.Value.Spec, Status: obj.Value.Spec}, obj.Revision); err != nil {
		return err
	}
	if !t.written[i].Swap(true) && t.writes.Add(1) == int64(len(t.written)) {
		t.convergedAt.Store(int64(time.Since(t.start)))
		close(t.allWritten)
	}
	return nil
}

// result fills in the common fields once the run has settled.
func (t *tracker) result(mallocs0 uint64) E2EResult {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return E2EResult{
		First:      time.Duration(t.firstAt.Load()),
		Converged:  time.Duration(t.convergedAt.Load()),
		Settled:    time.Duration(t.settledAt.Load()),
		Reconciles: t.reconciles.Load(),
		Writes:     t.writes.Load(),
		Mallocs:    ms.Mallocs - mallocs0,
	}
}

// countingStore counts the List and Watch calls made through it. It
// hides the store's optional interfaces; countingAsIs keeps the one the
// controller's cache uses.
type countingStore struct {
	E2EStore
	lists, watches atomic.Int64
}

func (c *countingStore) List(ctx context.Context, prefix string) ([]store.Object[*Pair], int64, error) {
	c.lists.Add(1)
	return c.E2EStore.List(ctx, prefix)
}

func (c *countingStore) Watch(ctx context.Context, prefix string, after int64) (store.Watcher[*Pair], error) {
	c.watches.Add(1)
	return c.E2EStore.Watch(ctx, prefix, after)
}

// countingAsIs returns s with its lists and watches counted (by the
// returned countingStore), as the store the controller is given: a store
// that can tell what changed (store.Differ) still can, so that its watch
// catches up by difference as it does when the store is given
// unwrapped.
func countingAsIs(s E2EStore) (E2EStore, *countingStore) {
	cs := &countingStore{E2EStore: s}
	if d, ok := s.(store.Differ[*Pair]); ok {
		return countingDiffer{cs, d}, cs
	}
	return cs, cs
}

// countingDiffer is a countingStore whose store is a store.Differ.
type countingDiffer struct {
	*countingStore
	d store.Differ[*Pair]
}

func (c countingDiffer) Diff(ctx context.Context, prefix string, after int64) ([]store.Event[*Pair], int64, error) {
	return c.d.Diff(ctx, prefix, after)
}
