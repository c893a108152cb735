package robustness_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// soakKeysEnv sets how many unique keys a soak test churns through
// (default 300, 100 with -short); the heap bound per key tightens as it
// grows, since the fixed slack is shared by more keys.
const soakKeysEnv = "CONVERGE_SOAK_KEYS"

func soakKeys() int {
	n := 300
	if testing.Short() {
		n = 100
	}
	if v, err := strconv.Atoi(os.Getenv(soakKeysEnv)); err == nil && v > 0 {
		n = v
	}
	return n
}

// Heap bounds of the soak tests: after the churn, the live heap may exceed
// the heap measured after a warm-up by a fixed slack plus an allowance per
// key churned since. A per-key record left behind (a last outcome, a
// tombstone with its value, a backoff entry) costs more than heapPerKey, so
// the bound catches it once the keys outweigh the slack: with the default
// 300 keys only leaks of a kilobyte or more per key, with
// CONVERGE_SOAK_KEYS=20000 anything above about 110 bytes per key. (The
// controller's Snapshot, checked empty, catches every record left behind
// whatever its size.) An embedded etcd member shares the process: its raft
// log holds every write until it snapshots (about 700 bytes per key here),
// hence its own allowances.
const (
	heapSlack      = 256 << 10
	heapPerKey     = 100
	etcdHeapSlack  = 8 << 20
	etcdHeapPerKey = 1 << 10
)

// leakCheck fails t if goroutines started during the test outlive it (and
// its cleanups, etcd members included). It must be called first.
func leakCheck(t *testing.T) {
	opts := []goleak.Option{
		goleak.IgnoreCurrent(),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("net/http.(*conn).serve"),
		goleak.IgnoreAnyFunction("net/http.(*connReader).backgroundRead"),
	}
	t.Cleanup(func() { goleak.VerifyNone(t, opts...) })
}

// liveHeap returns the heap in use after a full collection.
func liveHeap() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// churnReconciler fails, panics and requeues at random (by key and call,
// reproducibly for a given order of calls), and reports each key's first
// success.
type churnReconciler struct {
	calls atomic.Uint64
	// empty counts Deleted requests without the key's last value before
	// the key's deletion was reconciled: every key is reconciled before it
	// is deleted, so the cache held each one. (Once a deletion has been
	// reconciled, its tombstone may go: a later wake-up of the key, as by
	// a resync that raced with the deletion, carries no value.)
	empty      atomic.Int64
	emptyFirst atomic.Value // fmt of the first such request
	mu         sync.Mutex
	ok         map[string]bool
	gone       map[string]bool // keys whose deletion was reconciled
	notify     chan struct{}   // closed and replaced on every first success
}

func newChurnReconciler() *churnReconciler {
	return &churnReconciler{ok: map[string]bool{}, gone: map[string]bool{}, notify: make(chan struct{})}
}

func roll(key string, call uint64) uint32 {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%d", key, call)
	return h.Sum32() % 100
}

var errInjected = errors.New("injected error")

func (r *churnReconciler) Reconcile(ctx context.Context, req reconcile.Request[*replicaSet]) (reconcile.Result, error) {
	r.mu.Lock()
	gone := r.gone[req.Key]
	r.mu.Unlock()
	if req.Deleted && !gone && (req.Object.Key != req.Key || req.Object.Value == nil || req.Object.Revision == 0) {
		if r.empty.Add(1) == 1 {
			r.emptyFirst.Store(fmt.Sprintf("%+v", req))
		}
	}
	switch p := roll(req.Key, r.calls.Add(1)); {
	case p < 15:
		return reconcile.Result{}, errInjected
	case p < 20:
		panic("injected panic")
	case p < 30 && !req.Deleted:
		return reconcile.Result{RequeueAfter: time.Millisecond}, nil
	}
	if req.Deleted {
		r.mu.Lock()
		r.gone[req.Key] = true
		r.mu.Unlock()
	}
	if !req.Deleted {
		r.mu.Lock()
		if !r.ok[req.Key] {
			r.ok[req.Key] = true
			close(r.notify)
			r.notify = make(chan struct{})
		}
		r.mu.Unlock()
	}
	return reconcile.Result{}, nil
}

// waitReconciled waits until every key has had a successful reconcile.
func (r *churnReconciler) waitReconciled(t *testing.T, keys []string) {
	t.Helper()
	timer := time.NewTimer(patience)
	defer timer.Stop()
	for {
		r.mu.Lock()
		missing := ""
		for _, k := range keys {
			if !r.ok[k] {
				missing = k
				break
			}
		}
		if missing == "" {
			for _, k := range keys {
				delete(r.ok, k)
			}
		}
		notify := r.notify
		r.mu.Unlock()
		if missing == "" {
			return
		}
		select {
		case <-notify:
		case <-timer.C:
			t.Fatalf("%s was never reconciled successfully within %v", missing, patience)
		}
	}
}

// soakController is what the churn needs of a controller.
type soakController interface {
	WaitForRevision(ctx context.Context, rev int64) error
	Snapshot() []reconcile.KeyState
}

// churn creates keys first..first+n-1 in batches, waits until each batch
// was reconciled, and deletes it; then it waits until the controller has
// reconciled everything and keeps no record of any key.
func churn(t *testing.T, s store.Store[*replicaSet], c soakController, rec *churnReconciler, first, n int) {
	t.Helper()
	ctx := t.Context()
	const batch = 50
	for start := first; start < first+n; start += batch {
		var keys []string
		for i := start; i < min(start+batch, first+n); i++ {
			k := fmt.Sprintf("churn-%07d", i)
			_, err := writeSpec(ctx, s, k, 1)
			require.NoError(t, err)
			keys = append(keys, k)
		}
		rec.waitReconciled(t, keys)
		for _, k := range keys {
			_, err := deleteSpec(ctx, s, k)
			require.NoError(t, err)
		}
	}
	rev, err := s.Revision(ctx)
	require.NoError(t, err)
	defer func() {
		if n := rec.empty.Swap(0); n > 0 {
			t.Errorf("%d Deleted requests for keys the cache held came without the key's last value; the first: %v", n, rec.emptyFirst.Load())
		}
	}()
	wctx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	if err := c.WaitForRevision(wctx, rev); err != nil {
		var busy []string
		for _, k := range c.Snapshot() {
			if len(busy) < 10 {
				busy = append(busy, fmt.Sprintf("%+v", k))
			}
		}
		t.Fatalf("WaitForRevision(%d): %v; the controller's records: %v", rev, err, busy)
	}
	var left []reconcile.KeyState
	waitFor(t, func() bool { left = c.Snapshot(); return len(left) == 0 },
		"the controller keeps records of keys long gone: %v", lazy(func() string { return fmt.Sprintf("%d, first %+v", len(left), left[0]) }))
}

// measureChurn runs a warm-up churn, measures the live heap, churns keys
// more keys and measures again: the growth must stay within slack plus
// perKey per key. compact, if set, runs before each measure.
func measureChurn(t *testing.T, s store.Store[*replicaSet], c soakController, rec *churnReconciler, keys int, slack, perKey int64, compact func()) {
	t.Helper()
	warm := 100
	churn(t, s, c, rec, 0, warm)
	if compact != nil {
		compact()
	}
	before := liveHeap()
	churn(t, s, c, rec, warm, keys)
	if compact != nil {
		compact()
	}
	after := liveHeap()
	growth := int64(after) - int64(before)
	t.Logf("%d keys: live heap %d -> %d bytes (%+d, %.1f per key)", keys, before, after, growth, float64(growth)/float64(keys))
	require.LessOrEqual(t, growth, slack+perKey*int64(keys),
		"the heap grew by %d bytes over %d keys that all came and went", growth, keys)
}

// TestSoakMemoryFollowsKeysAlive churns unique keys (create, reconcile with
// errors, panics and requeues, delete) through a controller on every
// backend: afterwards the controller keeps no record of any key, the live
// heap has not grown with the keys ever seen, and no goroutine is left.
func TestSoakMemoryFollowsKeysAlive(t *testing.T) {
	for _, b := range chaosBackends() {
		t.Run(b.name, func(t *testing.T) {
			leakCheck(t)
			s, _ := b.open(t, 100)
			rec := newChurnReconciler()
			c, err := reconcile.New[*replicaSet](s, rec, reconcile.Options[*replicaSet]{
				Name:              "churn",
				Workers:           4,
				RateLimiter:       queue.NewExponential[string](time.Millisecond, 20*time.Millisecond, 0.2),
				HeartbeatInterval: b.heartbeat,
			})
			require.NoError(t, err)
			ctx, stop := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- c.Run(ctx) }()
			defer func() {
				stop()
				require.NoError(t, <-done)
			}()
			var compact func()
			slack, perKey := int64(heapSlack), int64(heapPerKey)
			if b.name == "etcd" {
				// etcd keeps every revision until compacted, and indexes
				// deleted keys until then.
				slack, perKey = etcdHeapSlack, etcdHeapPerKey
				compact = func() {
					rev, err := s.Revision(t.Context())
					require.NoError(t, err)
					require.NoError(t, s.Compact(t.Context(), rev))
				}
			}
			measureChurn(t, s, c, rec, soakKeys(), slack, perKey, compact)
		})
	}
}
