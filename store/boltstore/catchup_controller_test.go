package boltstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/boltstore"
)

// countingBolt is a bolt store with its lists and watches counted: its
// Diff is bolt's own.
type countingBolt struct {
	*boltstore.Store[*item]
	lists, watches atomic.Int64
}

func (c *countingBolt) List(ctx context.Context, prefix string) ([]store.Object[*item], int64, error) {
	c.lists.Add(1)
	return c.Store.List(ctx, prefix)
}

func (c *countingBolt) Watch(ctx context.Context, prefix string, after int64) (store.Watcher[*item], error) {
	c.watches.Add(1)
	return c.Store.Watch(ctx, prefix, after)
}

// TestAControllerWhoseWatchFallsBehindABurstOnBoltCatchesUpWithoutReListing:
// over bolt with a watch buffer far smaller than a batch of creates, then
// of deletes, the controller's watch falls behind and catches up (its
// watch ended and followed again, never re-listed): every object
// converges, every deleted key is reconciled as deleted, and the store is
// listed once.
func TestAControllerWhoseWatchFallsBehindABurstOnBoltCatchesUpWithoutReListing(t *testing.T) {
	raw, _ := openTemp(t, boltstore.WithWatchBuffer(4))
	s := &countingBolt{Store: raw}
	var mu sync.Mutex
	deleted := map[string]bool{}
	rec := reconcile.ReconcilerFunc[*item](func(ctx context.Context, req reconcile.Request[*item]) (reconcile.Result, error) {
		mu.Lock()
		deleted[req.Key] = req.Deleted
		mu.Unlock()
		if req.Deleted || req.Object.Value.S == "done" {
			return reconcile.Result{}, nil
		}
		_, err := req.Store.Update(ctx, req.Key, &item{N: req.Object.Value.N, S: "done"}, req.Object.Revision)
		return reconcile.Result{}, err
	})
	c, err := reconcile.New[*item](s, rec, reconcile.Options[*item]{Name: "burst"})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	require.NoError(t, c.WaitForSync(ctx))

	const n = 300
	creates := make([]store.Write[*item], n)
	for i := range creates {
		creates[i] = store.Write[*item]{Key: fmt.Sprintf("items/%03d", i), Value: &item{N: i}}
	}
	_, err = store.WriteBatch(ctx, raw, creates)
	require.NoError(t, err)
	converged := func() []store.Object[*item] {
		t.Helper()
		for {
			rev, err := raw.Revision(ctx)
			require.NoError(t, err)
			require.NoError(t, c.WaitForRevision(ctx, rev))
			if again, err := raw.Revision(ctx); err == nil && again == rev {
				objs, _, err := raw.List(ctx, "")
				require.NoError(t, err)
				return objs
			}
		}
	}
	var deletes []store.Write[*item]
	for i, obj := range converged() {
		require.Equal(t, "done", obj.Value.S, "%s converged", obj.Key)
		if i%2 == 0 {
			deletes = append(deletes, store.Write[*item]{Key: obj.Key, Revision: obj.Revision, Delete: true})
		}
	}
	_, err = store.WriteBatch(ctx, raw, deletes)
	require.NoError(t, err)
	require.Len(t, converged(), n/2)
	mu.Lock()
	for i := range n {
		key := fmt.Sprintf("items/%03d", i)
		require.Equal(t, i%2 == 0, deleted[key], "%s: reconciled as deleted exactly when deleted", key)
	}
	mu.Unlock()
	require.Greater(t, s.watches.Load(), int64(1), "the burst outran the watch")
	require.EqualValues(t, 1, s.lists.Load(), "listed once")
	cancel()
	require.NoError(t, <-done)
}
