package queue

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// Snapshot describes every key (state, dirtiness, priority, requeues and
// times): waiting keys in hand-out order, then delayed, then processing;
// Stats sums them up.
func TestSnapshotDescribesEveryKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New(Options[string]{RateLimiter: NewExponential[string](time.Second, time.Minute, 0)})
		start := time.Now()
		q.Add("busy")
		require.Equal(t, "busy", mustGet(t, q))
		q.Add("busy")
		advance(time.Second)
		q.AddWith("w2", AddOptions{Priority: 2})
		q.Add("w0")
		q.AddWith("d", AddOptions{RateLimited: true})
		q.AddWith("d", AddOptions{RateLimited: true}) // second requeue; keeps the earlier deadline
		want := []Item[string]{
			{Key: "w2", State: Waiting, Priority: 2},
			{Key: "w0", State: Waiting},
			{Key: "d", State: Delayed, Until: start.Add(2 * time.Second), Retries: 2},
			{Key: "busy", State: Processing, Dirty: true, Since: start},
		}
		got := q.View().Snapshot()
		require.Len(t, got, len(want))
		for i := range want {
			require.Equal(t, want[i].Key, got[i].Key)
			require.Equal(t, want[i].State, got[i].State)
			require.Equal(t, want[i].Dirty, got[i].Dirty)
			require.True(t, want[i].Since.Equal(got[i].Since), "%s since %v, want %v", want[i].Key, got[i].Since, want[i].Since)
			require.True(t, want[i].Until.Equal(got[i].Until), "%s until %v, want %v", want[i].Key, got[i].Until, want[i].Until)
			require.Equal(t, want[i].Priority, got[i].Priority)
			require.Equal(t, want[i].Retries, got[i].Retries)
		}
		require.Equal(t, "waiting", Waiting.String())
		require.Equal(t, "delayed", Delayed.String())
		require.Equal(t, "processing", Processing.String())
		require.Equal(t, "unknown", State(0).String())

		advance(time.Second)
		synctest.Wait() // let the queue's timer move "d" to ready
		s := q.View().Stats()
		require.Equal(t, Stats{Ready: 3, Processing: 1,
			UnfinishedWork: 2 * time.Second, LongestRunning: 2 * time.Second}, s)
	})
}
