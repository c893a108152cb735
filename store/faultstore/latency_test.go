package faultstore_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/faultstore"
	"github.com/stretchr/testify/require"
)

// Injected latency passes on the bubble's fake clock, within MaxLatency.
func TestLatencyStaysWithinMaxLatencyOnTheFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStore(t, store.NewMemory[int](), faultstore.Options{Rand: seeded(1), Rates: faultstore.Rates{MaxLatency: time.Second}})
		var total time.Duration
		for range 50 {
			start := time.Now()
			_, err := s.Revision(context.Background())
			require.NoError(t, err)
			took := time.Since(start)
			require.LessOrEqual(t, took, time.Second)
			total += took
		}
		require.Greater(t, total, 10*time.Second, "50 calls of up to a second each took almost nothing")
	})
}

// A Delay waits through the Sleep the caller gives; a context that ends
// first fails the call before it reaches the store.
func TestDelayWaitsThroughTheGivenSleepAndEndsWithTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := store.NewMemory[int]()
		var slept atomic.Int64
		s := newStore(t, mem, faultstore.Options{
			Plan: func(faultstore.Call) faultstore.Decision { return faultstore.Decision{Delay: time.Hour} },
			Sleep: func(ctx context.Context, d time.Duration) error {
				slept.Add(int64(d))
				select {
				case <-time.After(d):
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			},
		})
		start := time.Now()
		_, err := s.Create(context.Background(), "a", 1)
		require.NoError(t, err)
		require.Equal(t, time.Hour, time.Since(start))
		require.Equal(t, int64(time.Hour), slept.Load())

		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err = s.Create(ctx, "b", 1)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorIs(t, err, faultstore.ErrNotSent)
		_, err = mem.Get(context.Background(), "b")
		require.ErrorIs(t, err, store.ErrNotFound, "a call whose context ended during its delay reached the store")
	})
}

// A Pause holds the call whatever its context says, then lets it land, as a
// call in flight in a frozen process lands late.
func TestPauseIgnoresTheContextAndLandsLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := store.NewMemory[int]()
		s := newStore(t, mem, faultstore.Options{Plan: faultstore.Script(faultstore.Decision{Pause: time.Hour})})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		_, err := s.Create(ctx, "a", 1)
		require.NoError(t, err, "the paused call did not land")
		require.Equal(t, time.Hour, time.Since(start))
		_, err = mem.Get(context.Background(), "a")
		require.NoError(t, err)
	})
}
