package reconcile

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/store"
)

// TestAfterABurstCaughtUpByDifferenceEveryQueuedKeyIsFoundThroughItsHint:
// keys reconciled once, then all changed in no particular order behind a
// busy worker, faster than the controller's watch follows, reach the
// controller by difference (no re-list), and each queued key carries the
// hint of its own ledger record: the page's walk and the workers find
// every record without the index.
func TestAfterABurstCaughtUpByDifferenceEveryQueuedKeyIsFoundThroughItsHint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &countingMemory{Memory: store.NewMemory[*item](store.WithHistory(16), store.WithWatchLag(4))}
		defer s.Close()
		release := make(chan struct{})
		rec := ReconcilerFunc[*item](func(ctx context.Context, req Request[*item]) (Result, error) {
			if !req.Deleted && req.Object.Value.Want < 0 {
				select { // holds the one worker
				case <-release:
				case <-ctx.Done():
				}
			}
			return Result{}, nil
		})
		c := newTxnController(t, s, rec, Options[*item]{Workers: 1})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		defer func() { cancel(); <-done }()
		require.NoError(t, c.WaitForSync(ctx))
		const n = 300
		keys := make([]string, n)
		for i := range keys {
			keys[i] = fmt.Sprintf("items/%03d", i)
			put(t, s, keys[i], &item{Want: 1})
		}
		put(t, s, "block", &item{Want: 1})
		waitFor(ctx, t, c, s)
		put(t, s, "block", &item{Want: -1})
		synctest.Wait()
		rand.New(rand.NewPCG(41, 0)).Shuffle(n, func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		for _, key := range keys {
			put(t, s, key, &item{Want: 2})
		}
		synctest.Wait()
		require.Equal(t, n, c.Inspect(KeyQuery{}).States[queue.Waiting], "every changed key is queued")
		require.EqualValues(t, 1, s.lists.Load(), "the burst was caught up by difference, not re-listed")
		require.Empty(t, missedHints(c), "waiting keys whose hint does not name their record")
		close(release)
		waitFor(ctx, t, c, s)
	})
}

// missedHints returns the keys waiting in c's queue whose hint does not
// name their ledger record (a key handed out has given its hint to the
// worker).
func missedHints(c *Controller[*item]) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var missed []string
	c.q().View().States(func(h queue.Handout[string], st queue.State) {
		slot := int64(h.Hint) - 1
		if st == queue.Processing {
			return
		}
		if slot < 0 || slot >= c.led.recs.slots() || c.led.recs.at(int32(slot)).key != h.Key {
			missed = append(missed, h.Key)
		}
	})
	return missed
}
