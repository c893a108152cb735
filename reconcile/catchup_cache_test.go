package reconcile

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/store"
)

// catchingUp is a memory store whose watches are store.WatchCatchingUp's,
// with its lists counted.
type catchingUp struct {
	*store.Memory[*item]
	lists atomic.Int64
}

func (c *catchingUp) Watch(ctx context.Context, prefix string, after int64) (store.Watcher[*item], error) {
	return store.WatchCatchingUp(ctx, c.Memory, prefix, after)
}

func (c *catchingUp) List(ctx context.Context, prefix string) ([]store.Object[*item], int64, error) {
	c.lists.Add(1)
	return c.Memory.List(ctx, prefix)
}

// TestTheCacheOverAWatchThatCatchesUpByDifferenceMatchesTheStore: a
// controller whose watch falls far behind a tiny history, while keys are
// created, updated and deleted, and catches up by difference
// (store.WatchCatchingUp) instead of re-listing, ends with its cache equal
// to the store, every deleted key reconciled as deleted, and one list.
// It checks today's cache against the contract a later wiring relies on.
func TestTheCacheOverAWatchThatCatchesUpByDifferenceMatchesTheStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &catchingUp{Memory: store.NewMemory[*item](store.WithHistory(16), store.WithWatchLag(4))}
		defer s.Close()
		var mu sync.Mutex
		deleted := map[string]bool{}
		rec := ReconcilerFunc[*item](func(ctx context.Context, req Request[*item]) (Result, error) {
			mu.Lock()
			defer mu.Unlock()
			deleted[req.Key] = req.Deleted
			return Result{}, nil
		})
		c := newTxnController(t, s, rec, Options[*item]{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		require.NoError(t, c.WaitForSync(ctx))
		live := map[string]int64{}
		for i := range 600 {
			k := fmt.Sprintf("items/%02d", i%40)
			switch rev, ok := live[k]; {
			case !ok:
				obj, err := s.Create(ctx, k, &item{Want: i})
				require.NoError(t, err)
				live[k] = obj.Revision
			case i%5 == 0:
				_, err := s.Delete(ctx, k, rev)
				require.NoError(t, err)
				delete(live, k)
			default:
				obj, err := s.Update(ctx, k, &item{Want: i}, rev)
				require.NoError(t, err)
				live[k] = obj.Revision
			}
		}
		rev, err := s.Revision(ctx)
		require.NoError(t, err)
		require.NoError(t, c.WaitForRevision(ctx, rev))
		cached := map[string]int64{}
		for _, o := range c.Lister().List() {
			cached[o.Key] = o.Revision
		}
		require.Equal(t, live, cached, "the cache holds what the store holds")
		mu.Lock()
		for k, gone := range deleted {
			_, alive := live[k]
			require.Equal(t, !alive, gone, "%s: reconciled as deleted exactly when it is gone", k)
		}
		mu.Unlock()
		require.EqualValues(t, 1, s.lists.Load(), "no re-list")
		cancel()
		require.NoError(t, <-done)
	})
}
