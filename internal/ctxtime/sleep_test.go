package ctxtime

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// Sleep returns nil after exactly its duration, or the context's error as
// soon as the context ends (at once if it has ended already, even for a
// zero duration); a negative duration returns nil at once.
func TestSleepWaitsItsDurationOrUntilTheContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		require.NoError(t, Sleep(context.Background(), time.Second))
		require.Equal(t, time.Second, time.Since(start))

		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		require.ErrorIs(t, Sleep(ctx, time.Hour), context.DeadlineExceeded)
		require.Equal(t, 2*time.Second, time.Since(start))

		require.ErrorIs(t, Sleep(ctx, 0), context.DeadlineExceeded)
		require.Equal(t, 2*time.Second, time.Since(start), "an ended context returns at once")
		require.NoError(t, Sleep(context.Background(), -time.Second))
		require.Equal(t, 2*time.Second, time.Since(start), "a negative duration returns at once")
	})
}
