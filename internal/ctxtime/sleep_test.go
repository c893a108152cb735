package ctxtime

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		require.NoError(t, Sleep(context.Background(), time.Second))
		require.Equal(t, time.Second, time.Since(start))

		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		require.ErrorIs(t, Sleep(ctx, time.Hour), context.DeadlineExceeded)
		require.Equal(t, 2*time.Second, time.Since(start))

		require.ErrorIs(t, Sleep(ctx, 0), context.DeadlineExceeded)
		require.NoError(t, Sleep(context.Background(), -time.Second))
	})
}
