package reconcile

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/internal/cache"
	"github.com/converge-go/converge/store"
)

// TestTheFirstReconcileComesBeforeTheWholeInitialListIsRecorded: the
// first run's workers start once the initial list is in the cache, while
// its keys are still recorded and queued chunk by chunk, so the first
// reconcile does not wait for the whole list; yet that reconcile already
// sees the whole list in the cache, and WaitForSync and WaitForRevision
// still wait for every key of it.
func TestTheFirstReconcileComesBeforeTheWholeInitialListIsRecorded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 5 * cache.ReportChunk
		s := store.NewMemory[*item]()
		for i := range n {
			put(t, s, fmt.Sprintf("k%05d", i), &item{Want: 1})
		}
		first := make(chan int, 1) // how many objects the first reconcile's cache held
		var once sync.Once
		var c *Controller[*item]
		rec := ReconcilerFunc[*item](func(_ context.Context, req Request[*item]) (Result, error) {
			once.Do(func() { first <- len(c.Lister().List()) })
			return Result{}, nil
		})
		c, err := New(s, rec, Options[*item]{Name: "early", Workers: 2})
		require.NoError(t, err)
		hooks := c.cache.Hooks()
		observe := hooks.Changed
		calls := 0
		reconciledEarly := false
		hooks.Changed = func(changes []change[*item]) {
			calls++
			if calls == 2 {
				// The rest of the list waits for the first reconcile, or
				// for an hour of the fake clock if workers wait for it.
				select {
				case cached := <-first:
					reconciledEarly = true
					require.Equal(t, n, cached, "the first reconcile saw a partial cache")
				case <-time.After(time.Hour):
				}
			}
			observe(changes)
		}
		defer start(t, c)()
		require.NoError(t, c.WaitForSync(t.Context()))
		require.True(t, reconciledEarly, "the first reconcile waited for the whole list to be recorded")
		rev, err := s.Revision(t.Context())
		require.NoError(t, err)
		require.NoError(t, c.WaitForRevision(t.Context(), rev))
		require.Empty(t, c.Inspect(KeyQuery{States: nil, Limit: 1, Sort: ByPendingSince}).Keys[0].PendingSince, "a key of the list is still pending")
	})
}
