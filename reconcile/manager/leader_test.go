package manager_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/lock"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/manager"
	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// item is the value the tests store.
type item struct{ N int }

// put writes v at key, creating or replacing it, and returns the revision.
func put(t *testing.T, s store.Store[*item], key string, v *item) int64 {
	t.Helper()
	obj, err := store.CreateOrUpdate(t.Context(), s, key, func(*item, bool) (*item, error) { return v, nil })
	require.NoError(t, err)
	return obj.Revision
}

// replica is one process of a replicated deployment: a manager with an
// elector and one leader-only controller.
type replica struct {
	name    string
	mgr     *manager.Manager
	ctrl    *reconcile.Controller[*item]
	cancel  context.CancelFunc
	done    chan error
	mu      sync.Mutex
	handled []string
	tokens  []int64 // the fencing token each reconcile ran under
}

func newReplica(t *testing.T, name string, leases store.Store[lock.Record], s store.Store[*item]) *replica {
	t.Helper()
	r := &replica{name: name, done: make(chan error, 1)}
	lease, err := lock.NewLease(leases, "leader", lock.LeaseOptions{Holder: name, TTL: 3 * time.Second})
	require.NoError(t, err)
	el, err := lock.NewElector(lease, lock.ElectorOptions{})
	require.NoError(t, err)
	r.mgr, err = manager.New(manager.Options{Elector: el})
	require.NoError(t, err)
	r.ctrl, err = reconcile.New(s, reconcile.ReconcilerFunc[*item](func(ctx context.Context, req reconcile.Request[*item]) (reconcile.Result, error) {
		lk, ok := lock.FromContext(ctx)
		if !ok {
			return reconcile.Result{}, reconcile.Terminal(errors.New("reconcile without a lock in its context"))
		}
		r.mu.Lock()
		r.handled = append(r.handled, req.Key)
		r.tokens = append(r.tokens, lk.Token())
		r.mu.Unlock()
		return reconcile.Result{}, nil
	}), reconcile.Options[*item]{Name: "items"})
	require.NoError(t, err)
	require.True(t, r.ctrl.NeedsLeaderElection())
	require.NoError(t, r.mgr.Add(r.ctrl))
	return r
}

func (r *replica) start() {
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- r.mgr.Run(ctx) }()
}

func (r *replica) stop(t *testing.T) {
	r.cancel()
	require.NoError(t, <-r.done)
}

func (r *replica) count(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, k := range r.handled {
		if k == key {
			n++
		}
	}
	return n
}

func readyBody(t *testing.T, m *manager.Manager) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Readyz().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	return strings.TrimSpace(rec.Body.String())
}

// Leader-only controllers run only in the leader; when the leader stops,
// another replica takes over at once (the lease is released) and its
// controller reconciles, and followers report ready with their leadership.
func TestManagerRunsLeaderOnlyControllersInTheLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		leases := store.NewMemory[lock.Record]()
		s := store.NewMemory[*item]()
		put(t, s, "a", &item{})
		r1 := newReplica(t, "r1", leases, s)
		r2 := newReplica(t, "r2", leases, s)
		r1.start()
		synctest.Wait()
		r2.start()
		synctest.Wait()
		require.True(t, r1.mgr.IsLeader())
		require.False(t, r2.mgr.IsLeader())
		require.Equal(t, 1, r1.count("a"))
		require.Zero(t, r2.count("a"), "a follower reconciled")
		require.Equal(t, "ok\nleader: true", readyBody(t, r1.mgr))
		require.Equal(t, "ok\nleader: false", readyBody(t, r2.mgr), "a follower is ready")

		r1.stop(t)
		synctest.Wait()
		require.True(t, r2.mgr.IsLeader(), "the release did not hand over at once")
		rev := put(t, s, "b", &item{})
		require.NoError(t, r2.ctrl.WaitForRevision(context.Background(), rev))
		require.Equal(t, 1, r2.count("b"))
		require.Equal(t, 1, r2.count("a"), "a new leader reconciles every key")
		// Every reconcile ran with its term's lock in its context, for
		// fencing: a later term has a larger token.
		r1.mu.Lock()
		r2.mu.Lock()
		require.Len(t, r1.tokens, 1)
		require.Len(t, r2.tokens, 2)
		require.Greater(t, r2.tokens[0], r1.tokens[0])
		require.Equal(t, r2.tokens[0], r2.tokens[1])
		r2.mu.Unlock()
		r1.mu.Unlock()
		r2.stop(t)
	})
}

// A leader that loses its lease (another holder's record replaces it) stops
// its controller at once, and runs it again when it wins a later term.
func TestManagerRestartsControllerOnNextTerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		leases := store.NewMemory[lock.Record]()
		s := store.NewMemory[*item]()
		put(t, s, "a", &item{})
		r1 := newReplica(t, "r1", leases, s)
		r1.start()
		synctest.Wait()
		require.True(t, r1.mgr.IsLeader())

		// Someone deletes the lease record: r1's next renewal fails and it
		// steps down, then campaigns and wins again.
		obj, err := leases.Get(context.Background(), "leader")
		require.NoError(t, err)
		_, err = leases.Delete(context.Background(), "leader", obj.Revision)
		require.NoError(t, err)
		<-time.After(5 * time.Second)
		synctest.Wait()
		require.True(t, r1.mgr.IsLeader(), "the replica did not lead again")
		require.Equal(t, 2, r1.count("a"), "the controller did not run again in the new term")
		r1.stop(t)
	})
}

type failingLeaderOnly struct{}

func (failingLeaderOnly) Run(context.Context) error { return errors.New("boom") }
func (failingLeaderOnly) Name() string              { return "failing" }
func (failingLeaderOnly) NeedsLeaderElection() bool { return true }

type blockingLeaderOnly struct{}

func (blockingLeaderOnly) Run(ctx context.Context) error { <-ctx.Done(); return nil }
func (blockingLeaderOnly) Name() string                  { return "blocking" }
func (blockingLeaderOnly) NeedsLeaderElection() bool     { return true }

// A failing leader-only runnable stops the others of its term and the whole
// manager, whose Run returns the error (not a shutdown timeout).
func TestManagerLeaderOnlyFailureStopsAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		leases := store.NewMemory[lock.Record]()
		lease, err := lock.NewLease(leases, "leader", lock.LeaseOptions{Holder: "x", TTL: 3 * time.Second})
		require.NoError(t, err)
		el, err := lock.NewElector(lease, lock.ElectorOptions{})
		require.NoError(t, err)
		m, err := manager.New(manager.Options{Elector: el, ShutdownTimeout: time.Minute})
		require.NoError(t, err)
		require.NoError(t, m.Add(blockingLeaderOnly{}))
		require.NoError(t, m.Add(failingLeaderOnly{}))
		start := time.Now()
		err = m.Run(context.Background())
		require.ErrorContains(t, err, "boom")
		require.NotErrorIs(t, err, manager.ErrShutdownTimeout)
		require.Less(t, time.Since(start), time.Minute)
	})
}

// A reconcile in flight when leadership is lost has its context cancelled
// at once, not after the grace period: a deposed leader stops acting.
func TestReconcilesStopWhenLeadershipIsLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		leases := store.NewMemory[lock.Record]()
		s := store.NewMemory[*item]()
		put(t, s, "slow", &item{})
		lease, err := lock.NewLease(leases, "leader", lock.LeaseOptions{Holder: "r1", TTL: 3 * time.Second})
		require.NoError(t, err)
		el, err := lock.NewElector(lease, lock.ElectorOptions{})
		require.NoError(t, err)
		m, err := manager.New(manager.Options{Elector: el})
		require.NoError(t, err)
		cancelled := make(chan time.Time, 1)
		var calls atomic.Int32
		c, err := reconcile.New(s, reconcile.ReconcilerFunc[*item](func(ctx context.Context, req reconcile.Request[*item]) (reconcile.Result, error) {
			if calls.Add(1) > 1 {
				// The next term (the replica campaigns again and may win
				// before the test stops it) has nothing to wait for.
				return reconcile.Result{}, nil
			}
			<-ctx.Done()
			cancelled <- time.Now()
			return reconcile.Result{}, ctx.Err()
		}), reconcile.Options[*item]{Name: "items", GracePeriod: time.Hour})
		require.NoError(t, err)
		require.NoError(t, m.Add(c))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		synctest.Wait()
		require.True(t, m.IsLeader())

		// Someone else's write replaces the lease record: r1 is deposed at
		// its next renewal.
		obj, err := leases.Get(context.Background(), "leader")
		require.NoError(t, err)
		_, err = leases.Delete(context.Background(), "leader", obj.Revision)
		require.NoError(t, err)
		lost := time.Now()
		at := <-cancelled
		require.Less(t, at.Sub(lost), 3*time.Second, "the reconcile outlived the leadership")
		cancel()
		require.NoError(t, <-done)
	})
}
