package queue_test

import (
	"cmp"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/queue"
)

// TestItemsAndProcessingDescribeWhatSnapshotDoesUnordered: Items lists every
// key Snapshot lists, with the same description but no requeue count, and
// Processing exactly the keys handed out and not Done.
func TestItemsAndProcessingDescribeWhatSnapshotDoesUnordered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var q queue.Queue[string]
		q.Add("busy")
		key, err := q.Get(t.Context())
		require.NoError(t, err)
		require.Equal(t, "busy", key)
		q.Add("busy") // dirty
		q.AddWith("waiting", queue.AddOptions{Priority: 3, Tags: 1})
		q.AddWith("delayed", queue.AddOptions{After: time.Minute})
		q.AddWith("limited", queue.AddOptions{RateLimited: true})

		byKey := func(a, b queue.Item[string]) int { return cmp.Compare(a.Key, b.Key) }
		want := q.View().Snapshot()
		for i := range want {
			want[i].Retries = 0
		}
		slices.SortFunc(want, byKey)
		got := q.Items()
		slices.SortFunc(got, byKey)
		require.Equal(t, want, got)

		processing := q.View().Processing()
		require.Len(t, processing, 1)
		require.Equal(t, "busy", processing[0].Key)
		require.Equal(t, queue.Processing, processing[0].State)
		require.True(t, processing[0].Dirty)
	})
}

// TestStatesAndDescribeAgreeWithItems: States visits every key Items lists,
// once, with its state; Describe returns each key's Item as Items does, and
// false for a key the queue does not hold (never added, or Done).
func TestStatesAndDescribeAgreeWithItems(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var q queue.Queue[string]
		q.Add("busy")
		_, err := q.Get(t.Context())
		require.NoError(t, err)
		q.Add("busy") // dirty
		q.Add("done")
		key, err := q.Get(t.Context())
		require.NoError(t, err)
		q.Done(key) // gone
		q.AddWith("waiting", queue.AddOptions{Priority: 3, Tags: 1})
		q.AddWith("delayed", queue.AddOptions{After: time.Minute})
		q.AddWith("limited", queue.AddOptions{RateLimited: true})

		want := map[string]queue.Item[string]{}
		for _, it := range q.Items() {
			want[it.Key] = it
		}
		seen := map[string]queue.State{}
		q.View().States(func(h queue.Handout[string], s queue.State) {
			key := h.Key
			require.Equal(t, want[key].Tags, h.Tags, key)
			_, twice := seen[key]
			require.False(t, twice, "%s visited twice", key)
			seen[key] = s
		})
		require.Len(t, seen, len(want))
		for key, it := range want {
			require.Equal(t, it.State, seen[key], key)
			got, ok := q.View().Describe(key)
			require.True(t, ok, key)
			require.Equal(t, it, got)
		}
		for _, key := range []string{"done", "never"} {
			_, ok := q.View().Describe(key)
			require.False(t, ok, key)
		}
	})
}
