package queue

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAddBatchAsksTheRateLimiterForItsRateLimitedAdds: a rate-limited add
// in a batch gets the limiter's delay and counts a requeue, as AddWith's
// would, and the adds around it go in at once.
func TestAddBatchAsksTheRateLimiterForItsRateLimitedAdds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New(Options[string]{RateLimiter: NewExponential[string](time.Second, time.Minute, 0)})
		defer q.ShutDown()
		q.AddBatch([]BatchAdd[string]{
			{Key: "a"},
			{Key: "r", Options: AddOptions{RateLimited: true}},
			{Key: "b", Options: AddOptions{Priority: PriorityHigh}},
		})
		require.Equal(t, 1, q.View().Retries("r"))
		require.Equal(t, 2, q.View().Len(), "a and b at once, r delayed")
		for _, want := range []string{"b", "a"} {
			k, err := q.Get(t.Context())
			require.NoError(t, err)
			require.Equal(t, want, k)
			q.Done(k)
		}
		start := time.Now()
		k, err := q.Get(t.Context())
		require.NoError(t, err)
		require.Equal(t, "r", k)
		require.Equal(t, time.Second, time.Since(start), "the limiter's first delay")
	})
}

// TestAddBatchWakesAGetForEveryKeyItMakesReady: Gets blocked on an empty
// queue each receive one key of a batch, every key exactly once, whether
// the batch wakes fewer Gets than wakeAfterUnlock or more.
func TestAddBatchWakesAGetForEveryKeyItMakesReady(t *testing.T) {
	for _, n := range []int{3, wakeAfterUnlock + 9} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q := New(Options[string]{})
				got := blockedGets(q, n)
				var adds []BatchAdd[string]
				for i := range n {
					adds = append(adds, BatchAdd[string]{Key: fmt.Sprint(i)}, BatchAdd[string]{Key: fmt.Sprint(i)})
				}
				q.AddBatch(adds)
				synctest.Wait()
				seen := map[string]bool{}
				for range n {
					k := <-got
					require.False(t, seen[k], "key %s handed out twice", k)
					seen[k] = true
				}
				require.Len(t, seen, n)
				require.Zero(t, q.View().Len())
				q.ShutDown()
			})
		})
	}
}

// TestAddBatchOnAZeroQueueAndAfterShutDown: a zero Queue takes a batch
// with delays (its clock starts with the batch), and a queue shut down
// ignores one.
func TestAddBatchOnAZeroQueueAndAfterShutDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var q Queue[string]
		q.AddBatch([]BatchAdd[string]{{Key: "later", Options: AddOptions{After: time.Second}}, {Key: "now"}})
		require.Equal(t, 1, q.View().Len())
		advance(time.Second)
		synctest.Wait()
		require.Equal(t, 2, q.View().Len())
		q.AddBatch(nil)
		q.ShutDown()
		q.AddBatch([]BatchAdd[string]{{Key: "refused"}})
		require.False(t, q.View().Queued("refused"))
	})
}
