package reconcile

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/lock"
	"github.com/converge-go/converge/store"
)

// statusBatch writes the Seen status of every request that needs one in
// one store.WriteBatch through the first request's Store, and returns the
// results and the write results.
func statusBatch(ctx context.Context, reqs []Request[*item]) ([]BatchResult, []store.WriteResult[*item], error) {
	out := make([]BatchResult, len(reqs))
	var writes []store.Write[*item]
	var at []int
	for i, req := range reqs {
		if req.Deleted || req.Object.Value.Seen == req.Object.Value.Want {
			continue
		}
		v := *req.Object.Value
		v.Seen = v.Want
		writes = append(writes, store.Write[*item]{Key: req.Key, Value: &v, Revision: req.Object.Revision})
		at = append(at, i)
	}
	if len(writes) == 0 {
		return out, nil, nil
	}
	res, err := store.WriteBatch(ctx, reqs[0].Store, writes)
	for j, i := range at {
		switch {
		case err != nil:
			out[i].Err = err
		default:
			out[i].Err = res[j].Err
		}
	}
	return out, res, err
}

// TestABatchOfStatusWritesThroughRequestStoreCommitsTogetherAndWakesNoKey:
// a BatchReconciler's status writes made as one store.WriteBatch through
// Request.Store are committed together (consecutive revisions over the
// in-memory store), and each is its own write's echo: no key is
// reconciled again for it, and WaitForRevision covers them.
func TestABatchOfStatusWritesThroughRequestStoreCommitsTogetherAndWakesNoKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		raw := store.NewMemory[[]byte]()
		s := store.NewView[*item](raw, store.JSON[*item]{})
		putMany(t, s, 20)
		var mu sync.Mutex
		calls := map[string]int{}
		rec := &batchFunc{fn: func(ctx context.Context, reqs []Request[*item]) []BatchResult {
			mu.Lock()
			for _, r := range reqs {
				calls[r.Key]++
			}
			mu.Unlock()
			out, res, err := statusBatch(ctx, reqs)
			if err != nil {
				t.Errorf("WriteBatch: %v", err)
			}
			for i := 1; i < len(res); i++ {
				if res[i].Err == nil && res[i].Object.Revision != res[0].Object.Revision+int64(i) {
					t.Errorf("write %d at revision %d, the batch began at %d", i, res[i].Object.Revision, res[0].Object.Revision)
				}
			}
			return out
		}}
		c := newTxnController(t, s, rec, Options[*item]{BatchSize: 8})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		require.NoError(t, c.WaitForSync(ctx))
		synctest.Wait()
		rev, err := s.Revision(ctx)
		require.NoError(t, err)
		require.NoError(t, c.WaitForRevision(ctx, rev))
		objs, _, err := s.List(ctx, "items/")
		require.NoError(t, err)
		for _, o := range objs {
			require.Equal(t, 1, o.Value.Seen, "%s: its status is written", o.Key)
			require.Equal(t, 1, calls[o.Key], "%s: reconciled once, its status write's echo wakes nothing", o.Key)
		}
		cancel()
		require.NoError(t, <-done)
	})
}

// TestADeposedLeadersBatchOfWritesIsRefusedPerWriteAndWritesNothing: a
// batch through Request.Store carries the term's guard on every write, so
// a deposed leader's batch is refused write by write with
// store.ErrGuardFailed, writes nothing, and counts each refusal.
func TestADeposedLeadersBatchOfWritesIsRefusedPerWriteAndWritesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		raw := store.NewMemory[[]byte]()
		s := store.NewView[*item](raw, store.JSON[*item]{})
		leases := store.NewView[lock.Record](raw, store.JSON[lock.Record]{})
		putMany(t, s, 3)
		lease, err := lock.NewLease(leases, "leader", lock.LeaseOptions{Holder: "a", TTL: 30 * time.Second})
		require.NoError(t, err)
		el, err := lock.NewElector(lease, lock.ElectorOptions{})
		require.NoError(t, err)
		takenOver, results := make(chan struct{}), make(chan []store.WriteResult[*item], 1)
		var once sync.Once
		rec := &batchFunc{fn: func(ctx context.Context, reqs []Request[*item]) []BatchResult {
			out := make([]BatchResult, len(reqs))
			if len(reqs) < 3 {
				return out // wait for the batch of all three
			}
			once.Do(func() {
				<-takenOver
				_, res, _ := statusBatch(ctx, reqs)
				results <- res
			})
			return out
		}}
		m := &countingMetrics{}
		c := newTxnController(t, s, rec, Options[*item]{BatchSize: 3, Metrics: m})
		before, err := s.Revision(context.Background())
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- el.Run(ctx, c.Run) }()
		synctest.Wait()
		held, err := leases.Get(context.Background(), "leader")
		require.NoError(t, err)
		_, err = leases.Delete(context.Background(), "leader", held.Revision)
		require.NoError(t, err)
		_, err = leases.Create(context.Background(), "leader", lock.Record{Holder: "b"})
		require.NoError(t, err)
		close(takenOver)
		res := <-results
		require.Len(t, res, 3)
		for i, r := range res {
			require.ErrorIs(t, r.Err, store.ErrGuardFailed, fmt.Sprint("write ", i))
		}
		require.Equal(t, 3, m.get("rejected"), "Metrics.WriteRejected counts each refused write")
		objs, _, err := s.List(context.Background(), "items/")
		require.NoError(t, err)
		for _, o := range objs {
			require.LessOrEqual(t, o.Revision, before, "%s: nothing was written", o.Key)
		}
		cancel()
		<-done
	})
}
