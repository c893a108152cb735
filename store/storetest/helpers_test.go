package storetest_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/storetest"
	"github.com/stretchr/testify/require"
)

// NextEvent returns a watch's events in order, and WatchEnded returns the
// watch's Err once it has ended.
func TestNextEventReturnsEventsInOrderAndWatchEndedTheWatchsErr(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		mem := store.NewMemory[int]()
		w, err := mem.Watch(ctx, "", 0)
		require.NoError(t, err)
		for _, k := range []string{"a", "b"} {
			_, err := mem.Create(ctx, k, 1)
			require.NoError(t, err)
		}
		require.Equal(t, "a", storetest.NextEvent(t, w).Object.Key)
		require.Equal(t, "b", storetest.NextEvent(t, w).Object.Key)
		cancel()
		require.ErrorIs(t, storetest.WatchEnded(t, w), context.Canceled)
	})
}
