package queue_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/queue"
)

// TestTagsOfCoalescedAddsAreHandedOutTogether: the tags of every add that
// coalesces into one hand-out (waiting, delayed or dirty) come out ORed
// with it, Snapshot shows those not yet handed out, and a hand-out clears them, so
// that adds made while the key is processing tag its next hand-out only.
func TestTagsOfCoalescedAddsAreHandedOutTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var q queue.Queue[string]
		q.AddWith("k", queue.AddOptions{Tags: 1})
		q.AddWith("k", queue.AddOptions{Tags: 2, After: time.Second})
		q.AddWith("k", queue.AddOptions{Tags: 4})
		snap := q.View().Snapshot()
		require.Len(t, snap, 1)
		require.Equal(t, uint32(7), snap[0].Tags)

		h := getOne(t, &q)
		require.Equal(t, "k", h.Key)
		require.Equal(t, uint32(7), h.Tags)

		q.AddWith("k", queue.AddOptions{Tags: 8}) // dirty while processing
		require.Equal(t, uint32(8), q.View().Snapshot()[0].Tags)
		q.Done("k")
		require.Equal(t, uint32(8), getOne(t, &q).Tags, "the first hand-out's tags leaked into the second")
		q.Done("k")

		q.AddWith("r", queue.AddOptions{Tags: 16})
		q.Remove("r")
		q.Add("r")
		require.Zero(t, getOne(t, &q).Tags, "a removed add's tags outlived it")
	})
}

// TestTheLatestHintOfCoalescedAddsIsHandedOut: the hint handed out with a
// key is that of the latest add that had one (an add without one keeps
// it), by GetBatch of one key or of many alike; a hand-out or a Remove clears it,
// so that an add made while the key is processing hints its next hand-out
// only.
func TestTheLatestHintOfCoalescedAddsIsHandedOut(t *testing.T) {
	ctx := t.Context()
	var q queue.Queue[string]
	q.AddWith("k", queue.AddOptions{Hint: 3, Tags: 1})
	q.AddWith("k", queue.AddOptions{Hint: 5})
	q.AddWith("k", queue.AddOptions{Tags: 2}) // no hint: keeps 5
	require.Equal(t, queue.Handout[string]{Key: "k", Tags: 3, Hint: 5}, getOne(t, &q))

	q.Add("k") // dirty while processing, without a hint
	q.Done("k")
	require.Zero(t, getOne(t, &q).Hint, "the first hand-out's hint leaked into the second")
	q.AddWith("k", queue.AddOptions{Hint: 9}) // dirty, with one
	q.Done("k")
	batch, err := q.GetBatch(ctx, 4, nil)
	require.NoError(t, err)
	require.Equal(t, []queue.Handout[string]{{Key: "k", Hint: 9}}, batch)
	q.Done("k")

	q.AddWith("r", queue.AddOptions{Hint: 7})
	q.Remove("r")
	q.Add("r")
	require.Zero(t, getOne(t, &q).Hint, "a removed add's hint outlived it")
}

// getOne hands out one key with GetBatch, as a worker that reads its tags
// and hint does.
func getOne(t *testing.T, q *queue.Queue[string]) queue.Handout[string] {
	t.Helper()
	batch, err := q.GetBatch(t.Context(), 1, nil)
	require.NoError(t, err)
	require.Len(t, batch, 1)
	return batch[0]
}

// TestPrioritiesBeyondThirtyTwoBitsCountAsTheNearestEnd: a key keeps its
// priority in 32 bits; one asked beyond them orders as the nearest end of
// the range, above (or below) every other.
func TestPrioritiesBeyondThirtyTwoBitsCountAsTheNearestEnd(t *testing.T) {
	q := queue.New(queue.Options[string]{AgingAfter: -1})
	q.AddWith("low", queue.AddOptions{Priority: -1 << 40})
	q.AddWith("mid", queue.AddOptions{Priority: 0})
	q.AddWith("high", queue.AddOptions{Priority: 1 << 40})
	q.AddWith("top", queue.AddOptions{Priority: 1<<31 - 1}) // the end itself: after high, FIFO
	var got []string
	for range 4 {
		key, err := q.Get(t.Context())
		require.NoError(t, err)
		got = append(got, key)
	}
	require.Equal(t, []string{"high", "top", "mid", "low"}, got)
	for _, it := range q.View().Snapshot() {
		if it.Key == "high" {
			require.Equal(t, 1<<31-1, it.Priority, "Snapshot shows the clamped priority")
		}
	}
}
