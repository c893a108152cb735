package reconcile

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/lock"
	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// rewrite writes key's value again as it is, with a plain Update: a new
// revision and event for the same value (store.Modify would write nothing).
func rewrite(t *testing.T, s store.Store[*item], key string) int64 {
	t.Helper()
	obj, err := s.Get(context.Background(), key)
	require.NoError(t, err)
	obj, err = s.Update(context.Background(), key, obj.Value, obj.Revision)
	require.NoError(t, err)
	return obj.Revision
}

// TestAWriteThatChangesNothingThroughTheControllerIsStillFenced: under
// leader election, a store.Modify through Request.Store whose result
// changes nothing writes nothing while the term is current, and fails
// with store.ErrGuardFailed once another replica leads: the check that
// stands for the write carries the term's guard, as the write would.
func TestAWriteThatChangesNothingThroughTheControllerIsStillFenced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		raw := store.NewMemory[[]byte]()
		s := store.NewView[*item](raw, store.JSON[*item]{})
		leases := store.NewView[lock.Record](raw, store.JSON[lock.Record]{})
		created := put(t, s, "job", &item{Want: 1})
		lease, err := lock.NewLease(leases, "leader", lock.LeaseOptions{Holder: "a", TTL: 30 * time.Second})
		require.NoError(t, err)
		el, err := lock.NewElector(lease, lock.ElectorOptions{})
		require.NoError(t, err)

		same := func(cur *item) (*item, error) { return &item{Want: cur.Want, Owner: cur.Owner, Seen: cur.Seen}, nil }
		results, takenOver := make(chan error, 2), make(chan struct{})
		var first sync.Once
		rec := ReconcilerFunc[*item](func(ctx context.Context, req Request[*item]) (Result, error) {
			first.Do(func() {
				obj, err := store.Modify(ctx, req.Store, req.Key, same)
				if err == nil && obj.Revision != created {
					err = fmt.Errorf("a write that changes nothing was stored at revision %d", obj.Revision)
				}
				results <- err
				<-takenOver
				_, err = store.Modify(ctx, req.Store, req.Key, same)
				results <- err
			})
			return Result{}, nil
		})
		m := &countingMetrics{}
		c := newTxnController(t, s, rec, Options[*item]{Metrics: m})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- el.Run(ctx, c.Run) }()
		require.NoError(t, <-results, "the current term's write that changes nothing")

		held, err := leases.Get(context.Background(), "leader")
		require.NoError(t, err)
		_, err = leases.Delete(context.Background(), "leader", held.Revision)
		require.NoError(t, err)
		_, err = leases.Create(context.Background(), "leader", lock.Record{Holder: "b"})
		require.NoError(t, err)
		close(takenOver)
		require.ErrorIs(t, <-results, store.ErrGuardFailed, "a deposed leader's write that changes nothing")
		require.Equal(t, 1, m.get("rejected"), "Metrics.WriteRejected counts the refused check")
		obj, err := s.Get(context.Background(), "job")
		require.NoError(t, err)
		require.Equal(t, created, obj.Revision, "nothing was written")
		cancel()
		<-done
	})
}
