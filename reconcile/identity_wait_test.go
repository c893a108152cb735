package reconcile

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// A WaitForRevision of a revision of the old store begun after the cache
// has re-listed a store of another identity, while the keys of that list
// still wait for their reconciles, waits for them too: a revision below the
// list that began the cache's store is taken for one of an older store,
// as it is when the cache moves while WaitForRevision waits, so that a
// caller who learnt of the restore a moment after the controller did is
// not told the restored state is reconciled before it is.
func TestAWaitForAnOldRevisionBegunAfterTheReListWaitsForItsReconciles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		old := store.NewMemory[*item]()
		put(t, old, "x", &item{Want: 1})
		oldRev := put(t, old, "y", &item{Want: 2})
		// The restored store's revisions continue above the old one's, as
		// boltstore's Restore makes them (its revision bump).
		restored := store.NewMemory[*item]()
		for i := range 2 * int(oldRev) {
			put(t, restored, fmt.Sprintf("pad/%d", i), &item{})
		}
		put(t, restored, "x", &item{Want: 10})
		restoredRev := put(t, restored, "w", &item{Want: 20})
		require.Greater(t, restoredRev, oldRev)

		gate, relisted := make(chan struct{}), make(chan struct{}, 1)
		rec := &recorder{fn: func(ctx context.Context, req Request[*item]) (Result, error) {
			if req.Object.Revision > oldRev {
				select { // the first reconcile of the restored store's list
				case relisted <- struct{}{}:
				default:
				}
				<-gate // the restored store's keys wait
			}
			return Result{}, nil
		}}
		sw := &switchable{cur: faulty(t, old)}
		c := newTxnController(t, sw, rec, Options[*item]{Prefix: "", HeartbeatInterval: time.Second})
		defer start(t, c)()
		release := sync.OnceFunc(func() { close(gate) })
		defer release() // before the stop, should the test fail
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, c.WaitForRevision(ctx, oldRev))

		sw.switchTo(faulty(t, restored), true)
		<-relisted
		waited := make(chan error, 1)
		go func() { waited <- c.WaitForRevision(ctx, oldRev) }()
		synctest.Wait()
		select {
		case err := <-waited:
			t.Fatalf("WaitForRevision(%d) returned (%v) while the restored store's keys wait for their reconciles", oldRev, err)
		default:
		}
		require.Equal(t, restoredRev, c.Health().Revision, "the cache did not re-list the restored store")
		release()
		require.NoError(t, <-waited)
		for key, want := range map[string]int{"x": 10, "w": 20} {
			req, ok := rec.last(key)
			require.True(t, ok, key)
			require.False(t, req.Deleted, key)
			require.Equal(t, want, req.Object.Value.Want, key)
		}
		req, ok := rec.last("y")
		require.True(t, ok && req.Deleted, "y, which the restored store lacks, not reconciled as deleted: %+v", req)
	})
}
