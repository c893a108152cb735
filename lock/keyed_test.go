package lock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// TestKeyedMutualExclusion: many goroutines over a few keys never find
// another holder of their key inside the critical section, and the plain
// (unsynchronised) per-key counters add up, which the race detector checks.
func TestKeyedMutualExclusion(t *testing.T) {
	const keys, workers, rounds = 8, 64, 200
	var k Keyed[int]
	var inside [keys]atomic.Int32
	var counts [keys]int
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for r := range rounds {
				key := (w + r) % keys
				if r%3 == 0 {
					if !k.TryLock(key) {
						continue
					}
				} else if err := k.Lock(t.Context(), key); err != nil {
					t.Error(err)
					return
				}
				if n := inside[key].Add(1); n != 1 {
					t.Errorf("key %d has %d holders", key, n)
				}
				counts[key]++
				inside[key].Add(-1)
				if err := k.Unlock(key); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	total := 0
	for _, c := range counts {
		total += c
	}
	require.Positive(t, total)
	require.Zero(t, k.size(), "entries left after every key was unlocked")
}

// TestKeyedDifferentKeysInParallel: every goroutine holds its own key at the
// same moment; if different keys were serialised this would deadlock, which
// synctest reports.
func TestKeyedDifferentKeysInParallel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 50
		var k Keyed[string]
		var holding sync.WaitGroup
		holding.Add(n)
		all := make(chan struct{})
		var done sync.WaitGroup
		for i := range n {
			done.Go(func() {
				key := string(rune('a' + i))
				if err := k.Lock(t.Context(), key); err != nil {
					t.Error(err)
				}
				holding.Done()
				<-all
				if err := k.Unlock(key); err != nil {
					t.Error(err)
				}
			})
		}
		holding.Wait()
		require.Equal(t, n, k.size())
		close(all)
		done.Wait()
		require.Zero(t, k.size())
	})
}

func TestKeyedLockHonoursContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var k Keyed[string]
		require.True(t, k.TryLock("a"))

		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start := time.Now()
		err := k.Lock(ctx, "a")
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Equal(t, time.Second, time.Since(start))
		require.Equal(t, 1, k.size(), "the cancelled waiter left its reference behind")

		// A cancelled context is refused even when the key is free.
		require.NoError(t, k.Unlock("a"))
		require.ErrorIs(t, k.Lock(ctx, "a"), context.DeadlineExceeded)
		require.True(t, k.TryLock("a"), "a failed Lock must not hold the key")
		require.NoError(t, k.Unlock("a"))
		require.Zero(t, k.size())
	})
}

func TestKeyedTryLock(t *testing.T) {
	var k Keyed[int]
	require.True(t, k.TryLock(1))
	require.False(t, k.TryLock(1))
	require.True(t, k.TryLock(2))
	require.NoError(t, k.Unlock(1))
	require.True(t, k.TryLock(1))
	require.NoError(t, k.Unlock(1))
	require.NoError(t, k.Unlock(2))
	require.Zero(t, k.size())
}

func TestKeyedUnlockNotLocked(t *testing.T) {
	var k Keyed[string]
	require.ErrorIs(t, k.Unlock("never"), ErrNotLocked)
	require.True(t, k.TryLock("x"))
	require.NoError(t, k.Unlock("x"))
	require.ErrorIs(t, k.Unlock("x"), ErrNotLocked)
	require.Zero(t, k.size())

	// A key awaited but not held is not unlockable either.
	synctest.Test(t, func(t *testing.T) {
		var k Keyed[string]
		require.True(t, k.TryLock("y"))
		ctx, cancel := context.WithCancel(t.Context())
		waiting := make(chan error)
		go func() { waiting <- k.Lock(ctx, "y") }()
		synctest.Wait()
		require.NoError(t, k.Unlock("y"))
		require.NoError(t, <-waiting, "the waiter takes the key")
		require.NoError(t, k.Unlock("y"))
		require.ErrorIs(t, k.Unlock("y"), ErrNotLocked)
		cancel()
		require.Zero(t, k.size())
	})
}

func TestKeyedNilContext(t *testing.T) {
	var k Keyed[string]
	//lint:ignore SA1012 a nil context is the bad input under test
	err := k.Lock(nil, "a")
	require.ErrorIs(t, err, ErrInvalid)
	require.Zero(t, k.size())
}

// TestKeyedNoLostWakeup: waiters blocked on one key are each woken by one
// Unlock; none is left waiting (synctest would report it at the end).
func TestKeyedNoLostWakeup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const waiters = 20
		var k Keyed[string]
		require.True(t, k.TryLock("k"))
		got := make(chan int, waiters)
		for i := range waiters {
			go func() {
				if err := k.Lock(t.Context(), "k"); err != nil {
					t.Error(err)
					return
				}
				got <- i
			}()
		}
		synctest.Wait()
		require.Empty(t, got, "no waiter may take a held key")
		seen := map[int]bool{}
		for range waiters {
			require.NoError(t, k.Unlock("k"))
			synctest.Wait()
			require.Len(t, got, 1, "one Unlock wakes exactly one waiter")
			seen[<-got] = true
		}
		require.Len(t, seen, waiters)
		require.NoError(t, k.Unlock("k"))
		require.Zero(t, k.size())
	})
}

// TestKeyedCancelledWaiterDoesNotStealWakeup: a waiter whose context ends
// leaves, and the next Unlock still reaches the remaining waiter.
func TestKeyedCancelledWaiterDoesNotStealWakeup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var k Keyed[string]
		require.True(t, k.TryLock("k"))
		ctx, cancel := context.WithCancel(t.Context())
		first := make(chan error, 1)
		go func() { first <- k.Lock(ctx, "k") }()
		second := make(chan error, 1)
		go func() { second <- k.Lock(t.Context(), "k") }()
		synctest.Wait()
		cancel()
		require.True(t, errors.Is(<-first, context.Canceled))
		require.NoError(t, k.Unlock("k"))
		require.NoError(t, <-second)
		require.NoError(t, k.Unlock("k"))
		require.Zero(t, k.size())
	})
}
