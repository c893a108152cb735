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
		q.AddAfter("delayed", time.Minute)
		q.AddRateLimited("limited")

		byKey := func(a, b queue.Item[string]) int { return cmp.Compare(a.Key, b.Key) }
		want := q.Snapshot()
		for i := range want {
			want[i].Requeues = 0
		}
		slices.SortFunc(want, byKey)
		got := q.Items()
		slices.SortFunc(got, byKey)
		require.Equal(t, want, got)

		processing := q.Processing()
		require.Len(t, processing, 1)
		require.Equal(t, "busy", processing[0].Key)
		require.Equal(t, queue.Processing, processing[0].State)
		require.True(t, processing[0].Dirty)
	})
}
