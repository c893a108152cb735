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
		ctx := t.Context()
		var q queue.Queue[string]
		q.AddWith("k", queue.AddOptions{Tags: 1})
		q.AddWith("k", queue.AddOptions{Tags: 2, After: time.Second})
		q.AddWith("k", queue.AddOptions{Tags: 4})
		snap := q.Snapshot()
		require.Len(t, snap, 1)
		require.Equal(t, uint32(7), snap[0].Tags)

		key, tags, err := q.GetTagged(ctx)
		require.NoError(t, err)
		require.Equal(t, "k", key)
		require.Equal(t, uint32(7), tags)

		q.AddWith("k", queue.AddOptions{Tags: 8}) // dirty while processing
		require.Equal(t, uint32(8), q.Snapshot()[0].Tags)
		q.Done("k")
		_, tags, err = q.GetTagged(ctx)
		require.NoError(t, err)
		require.Equal(t, uint32(8), tags, "the first hand-out's tags leaked into the second")
		q.Done("k")

		q.AddWith("r", queue.AddOptions{Tags: 16})
		q.Remove("r")
		q.Add("r")
		_, tags, err = q.GetTagged(ctx)
		require.NoError(t, err)
		require.Zero(t, tags, "a removed add's tags outlived it")
	})
}

// TestTheLatestHintOfCoalescedAddsIsHandedOut: the hint handed out with a
// key is that of the latest add that had one (an add without one keeps
// it), by GetHandout and GetBatch alike; a hand-out or a Remove clears it,
// so that an add made while the key is processing hints its next hand-out
// only.
func TestTheLatestHintOfCoalescedAddsIsHandedOut(t *testing.T) {
	ctx := t.Context()
	var q queue.Queue[string]
	q.AddWith("k", queue.AddOptions{Hint: 3, Tags: 1})
	q.AddWith("k", queue.AddOptions{Hint: 5})
	q.AddWith("k", queue.AddOptions{Tags: 2}) // no hint: keeps 5
	h, err := q.GetHandout(ctx)
	require.NoError(t, err)
	require.Equal(t, queue.Handout[string]{Key: "k", Tags: 3, Hint: 5}, h)

	q.Add("k") // dirty while processing, without a hint
	q.Done("k")
	h, err = q.GetHandout(ctx)
	require.NoError(t, err)
	require.Zero(t, h.Hint, "the first hand-out's hint leaked into the second")
	q.AddWith("k", queue.AddOptions{Hint: 9}) // dirty, with one
	q.Done("k")
	batch, err := q.GetBatch(ctx, 4, nil)
	require.NoError(t, err)
	require.Equal(t, []queue.Handout[string]{{Key: "k", Hint: 9}}, batch)
	q.Done("k")

	q.AddWith("r", queue.AddOptions{Hint: 7})
	q.Remove("r")
	q.Add("r")
	h, err = q.GetHandout(ctx)
	require.NoError(t, err)
	require.Zero(t, h.Hint, "a removed add's hint outlived it")
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
	for _, it := range q.Snapshot() {
		if it.Key == "high" {
			require.Equal(t, 1<<31-1, it.Priority, "Snapshot shows the clamped priority")
		}
	}
}
