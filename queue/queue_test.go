package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

func newTestQueue() *Queue[string] {
	return New(Options[string]{RateLimiter: NewExponential[string](time.Millisecond, time.Second, 0)})
}

// mustGet takes a ready key without blocking.
func mustGet(t *testing.T, q *Queue[string]) string {
	t.Helper()
	q.mu.Lock()
	n := q.ready.Len()
	q.mu.Unlock()
	require.Positive(t, n, "no key is ready")
	k, err := q.Get(context.Background())
	require.NoError(t, err)
	return k
}

// requireEmpty asserts that no key is ready.
func requireEmpty(t *testing.T, q *Queue[string]) {
	t.Helper()
	require.Zero(t, q.View().Len(), "a key is ready")
}

func TestAddDeduplicatesWaitingKeys(t *testing.T) {
	q := newTestQueue()
	q.Add("a")
	q.Add("b")
	q.Add("a")
	require.Equal(t, 2, q.View().Len())
	require.Equal(t, "a", mustGet(t, q))
	require.Equal(t, "b", mustGet(t, q))
	requireEmpty(t, q)
}

func TestAddWhileProcessingMarksDirtyAndRequeuesAfterDone(t *testing.T) {
	q := newTestQueue()
	q.Add("a")
	require.Equal(t, "a", mustGet(t, q))
	q.Add("a")
	q.Add("a")
	requireEmpty(t, q) // never handed to a second worker while processing
	snap := q.View().Snapshot()
	require.Len(t, snap, 1)
	require.Equal(t, Processing, snap[0].State)
	require.True(t, snap[0].Dirty)
	q.Done("a")
	require.Equal(t, 1, q.View().Len())
	require.Equal(t, "a", mustGet(t, q))
	q.Done("a")
	requireEmpty(t, q)
	require.Empty(t, q.View().Snapshot())
}

func TestDoneOfUnknownKeyIsNoop(t *testing.T) {
	q := newTestQueue()
	q.Done("nope")
	q.Add("a")
	q.Done("a") // waiting, not processing: nothing happens
	require.Equal(t, 1, q.View().Len())
}

func TestGetBlocksUntilAdd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newTestQueue()
		got := make(chan string)
		go func() {
			k, err := q.Get(context.Background())
			if err == nil {
				got <- k
			}
			close(got)
		}()
		synctest.Wait()
		select {
		case <-got:
			t.Fatal("Get returned on an empty queue")
		default:
		}
		q.Add("a")
		require.Equal(t, "a", <-got)
	})
}

func TestGetHonoursContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newTestQueue()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := q.Get(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)

		// An ended context wins over a ready key: the key stays for others.
		q.Add("a")
		done, stop := context.WithCancel(context.Background())
		stop()
		_, err = q.Get(done)
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, 1, q.View().Len())
	})
}

// A Get whose context ends just as it is woken passes the wake-up on, so a
// ready key is never left with a worker still waiting.
func TestCancelledWaiterPassesWakeupOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newTestQueue()
		ctx, cancel := context.WithCancel(context.Background())
		first := make(chan error, 1)
		go func() { _, err := q.Get(ctx); first <- err }()
		synctest.Wait()
		second := make(chan string, 1)
		go func() { k, _ := q.Get(context.Background()); second <- k }()
		synctest.Wait()
		// Wake the first waiter and cancel it under the lock, so both
		// select cases are ready when it runs.
		q.mu.Lock()
		q.addLocked("a", AddOptions{}, 0, 0)
		cancel()
		q.unlockAndWake()
		err := <-first
		if err == nil {
			// The first waiter took the key; give it back to the second.
			q.Done("a")
			q.Add("a")
		}
		require.Equal(t, "a", <-second)
	})
}

// After ShutDown, Get fails with ErrShutDown, Add is refused without a
// panic, and Drain reports the key that was still waiting.
func TestAfterShutDownGetFailsAddIsRefusedAndDrainReportsWaitingKeys(t *testing.T) {
	q := newTestQueue()
	q.Add("a")
	q.ShutDown()
	_, err := q.Get(context.Background())
	require.ErrorIs(t, err, ErrShutDown)
	q.Add("b") // refused, no panic
	require.True(t, q.View().ShuttingDown())
	left, err := q.Drain(context.Background())
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, left)
}

// The queue's errors are distinct sentinels, prefixed "queue: ", that no
// context error matches: a caller can tell a shut-down queue from a
// cancelled Get and from bad input.
func TestErrorsAreDistinctPrefixedSentinels(t *testing.T) {
	errs := []error{ErrShutDown, ErrInvalid}
	for i, a := range errs {
		require.True(t, strings.HasPrefix(a.Error(), "queue: "), a.Error())
		for _, ctxErr := range []error{context.Canceled, context.DeadlineExceeded} {
			require.False(t, errors.Is(a, ctxErr), "%v is %v", a, ctxErr)
			require.False(t, errors.Is(ctxErr, a), "%v is %v", ctxErr, a)
		}
		for j, b := range errs {
			require.Equal(t, i == j, errors.Is(a, b), "errors.Is(%v, %v)", a, b)
		}
	}
}

// advance lets fake time pass inside a synctest bubble.
func advance(d time.Duration) { <-time.After(d) }

// TestOneFiringWakesEveryWaitingGetForItsDueKeys: when one timer firing
// makes more keys due than a critical section wakes after unlocking, every
// waiting Get still gets one of them, and each key goes to exactly one.
func TestOneFiringWakesEveryWaitingGetForItsDueKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newTestQueue()
		const n = 3*wakeAfterUnlock + 1
		got := blockedGets(q, n)
		for i := range n {
			q.AddWith(fmt.Sprintf("k%02d", i), AddOptions{After: time.Second})
		}
		advance(time.Second) // the timer fires once for all n keys
		synctest.Wait()
		require.Len(t, got, n, "some Gets were not woken")
		seen := map[string]bool{}
		for range n {
			k := <-got
			require.False(t, seen[k], "key %s handed out twice", k)
			seen[k] = true
		}
		q.ShutDown()
	})
}

// blockedGets starts n Gets on q and, inside a synctest bubble, returns
// once each of them blocks; the keys they receive arrive on the channel.
func blockedGets[K comparable](q *Queue[K], n int) <-chan K {
	got := make(chan K, n)
	for range n {
		go func() {
			k, err := q.Get(context.Background())
			if err == nil {
				got <- k
			}
		}()
	}
	synctest.Wait()
	return got
}
