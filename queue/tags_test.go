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
