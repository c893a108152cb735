package robustness_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/converge-go/converge/lock"
	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/manager"
	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// flipLocker is a Locker whose terms last a few milliseconds each (until
// settle), so that leadership flips hundreds of times a second.
type flipLocker struct {
	terms  atomic.Int64
	settle atomic.Bool // terms acquired from now on last until released

	mu  sync.Mutex
	rng *rand.Rand
}

func (l *flipLocker) Acquire(ctx context.Context) (lock.Lock, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	lctx, cancel := context.WithCancelCause(context.Background())
	fl := &flipLock{ctx: lctx, cancel: cancel, token: l.terms.Add(1)}
	if !l.settle.Load() {
		l.mu.Lock()
		d := time.Duration(500+l.rng.IntN(2500)) * time.Microsecond
		l.mu.Unlock()
		fl.timer = time.AfterFunc(d, func() { cancel(lock.ErrLost) })
	}
	return fl, nil
}

// flipLock is one term of a flipLocker.
type flipLock struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	token  int64
	timer  *time.Timer
}

func (l *flipLock) Context() context.Context { return l.ctx }
func (l *flipLock) Token() int64             { return l.token }

// Guard names a key no test writes: the churn's reconciler writes nothing.
func (l *flipLock) Guard() store.Guard { return store.Guard{Key: "flip-term"} }

func (l *flipLock) Release(context.Context) error {
	if l.timer != nil {
		l.timer.Stop()
	}
	l.cancel(lock.ErrReleased)
	return nil
}

// minFlips is how many terms of leadership the leader soak must see, at
// the least, while it churns.
const minFlips = 300

// TestSoakLeadershipFlipsLoseNoRetryAndKeepNoRecord churns unique keys
// (create, reconcile with errors, panics and requeues, delete) through a
// leader-only controller run by a Manager whose leadership flips hundreds
// of times meanwhile: every key is reconciled, and afterwards the
// controller keeps no record of any key (a retry dropped at a change of
// term would leave its key's record behind), the live heap has not grown
// with the keys or the terms, and no goroutine is left.
func TestSoakLeadershipFlipsLoseNoRetryAndKeepNoRecord(t *testing.T) {
	// Before the controller covered changes its cache held ahead of
	// observing them, this failed in nearly every run: Deleted requests
	// with an empty Object for keys the cache held, and WaitForRevision
	// hanging on deletions no reconcile could cover.
	leakCheck(t)
	s := store.NewMemory[*replicaSet](store.WithHistory(100), store.WithTombstones(100)) // the store keeps little: the controller is measured
	t.Cleanup(func() { _ = s.Close() })
	locker := &flipLocker{rng: rand.New(rand.NewPCG(1, 2))}
	el, err := lock.NewElector(locker, lock.ElectorOptions{RetryDelay: time.Millisecond})
	require.NoError(t, err)
	m, err := manager.New(manager.Options{Elector: el, ShutdownTimeout: patience})
	require.NoError(t, err)
	rec := newChurnReconciler()
	c, err := reconcile.New[*replicaSet](s, rec, reconcile.Options[*replicaSet]{
		Name:              "churn",
		Workers:           4,
		RateLimiter:       queue.NewExponential[string](time.Millisecond, 20*time.Millisecond, 0.2),
		HeartbeatInterval: 50 * time.Millisecond,
	})
	require.NoError(t, err)
	require.True(t, c.NeedsLeaderElection())
	require.NoError(t, m.Add(c))
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() {
		stop()
		require.NoError(t, <-done)
	}()

	keys := soakKeys()
	warm := 100
	churn(t, s, c, rec, 0, warm)
	before := liveHeap()
	flipsBefore := locker.terms.Load()
	next := warm
	for next < warm+keys || locker.terms.Load()-flipsBefore < minFlips {
		churn(t, s, c, rec, next, 50)
		next += 50
	}
	flips := locker.terms.Load() - flipsBefore
	// Let the leadership settle, so that the last term's controller can
	// finish every retry, then check that nothing is left.
	locker.settle.Store(true)
	churn(t, s, c, rec, next, 1)
	after := liveHeap()
	churned := next + 1 - warm
	growth := int64(after) - int64(before)
	t.Logf("%d keys over %d terms: live heap %d -> %d bytes (%+d, %.1f per key)", churned, flips, before, after, growth, float64(growth)/float64(churned))
	require.GreaterOrEqual(t, flips, int64(minFlips), "leadership did not flip often enough to test anything")
	require.LessOrEqual(t, growth, int64(heapSlack)+int64(heapPerKey*churned),
		"the heap grew by %d bytes over %d keys and %d terms", growth, churned, flips)
}
