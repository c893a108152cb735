package etcdstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/converge-go/converge/lock"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/etcdstore"
	"github.com/stretchr/testify/require"
)

// answerLost is a lease store whose next Update, once armed, is applied but
// reported as timed out, as when the answer of a write is lost in a
// failover.
type answerLost struct {
	store.Store[lock.Record]
	armed atomic.Bool
}

func (s *answerLost) Update(ctx context.Context, key string, v lock.Record, rev int64, guards ...store.Guard) (store.Object[lock.Record], error) {
	obj, err := s.Store.Update(ctx, key, v, rev, guards...)
	if err == nil && s.armed.CompareAndSwap(true, false) {
		return store.Object[lock.Record]{}, fmt.Errorf("%w: %w", store.ErrUnavailable, context.DeadlineExceeded)
	}
	return obj, err
}

// TestLeaseRenewalAppliedButUnansweredKeepsTheTerm: a lock.Lease renewal
// that etcd applied but whose answer was lost makes the next attempt fail
// with a conflict; the holder recognises its own record (same token) and
// keeps its term instead of giving it up, and goes on renewing.
func TestLeaseRenewalAppliedButUnansweredKeepsTheTerm(t *testing.T) {
	client := newClient(t, nil, startServer(t, nil).Endpoint())
	ctx := t.Context()
	s, err := etcdstore.New[lock.Record](client, "leases/")
	require.NoError(t, err)
	lossy := &answerLost{Store: s}
	l, err := lock.NewLease(lossy, "leader", lock.LeaseOptions{
		Holder: "a", TTL: 3 * time.Second, RenewInterval: 300 * time.Millisecond, RenewDeadline: 2 * time.Second,
	})
	require.NoError(t, err)
	a, err := l.Acquire(ctx)
	require.NoError(t, err)
	defer func() { _ = a.Release(context.WithoutCancel(ctx)) }()

	lossy.armed.Store(true)
	require.Eventually(t, func() bool { return !lossy.armed.Load() }, patience, 10*time.Millisecond, "a renewal was applied without an answer")
	rec, err := s.Get(ctx, "leader")
	require.NoError(t, err)
	target := rec.Value.Renewals + 2
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(patience)
	for ; rec.Value.Renewals < target; <-tick.C {
		require.NoError(t, context.Cause(a.Context()), "the term survives a renewal whose answer was lost")
		require.True(t, time.Now().Before(deadline), "renewals went on within %v", patience)
		if got, err := s.Get(ctx, "leader"); err == nil {
			rec = got
		}
	}
	require.NoError(t, context.Cause(a.Context()))
	require.Equal(t, a.Token(), rec.CreateRevision)
}

// TestLockerGivesUpWithinTheTTLWhenRenewalsFail: with the cluster gone,
// the Locker's renewals fail and its term's context is cancelled with
// lock.ErrLost (no later than the TTL after the last successful renewal,
// before etcd could expire the lease and let another contender in).
func TestLockerGivesUpWithinTheTTLWhenRenewalsFail(t *testing.T) {
	e := startServer(t, nil)
	client := newClient(t, nil, e.Endpoint())
	s := newStore(t, client, "app/")
	l, err := etcdstore.NewLocker(s, "locks/leader", etcdstore.WithLeaseTTL(time.Second))
	require.NoError(t, err)
	a, err := l.Acquire(t.Context())
	require.NoError(t, err)
	e.Stop()
	<-await(t, chanOf(a.Context().Done()), "the term's end once renewals fail")
	require.ErrorIs(t, context.Cause(a.Context()), lock.ErrLost)
	short, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, a.Release(short), store.ErrUnavailable, "releasing without a cluster")
}
