package queue

import (
	"context"
	"math"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// getAt takes the next key and returns it with the (fake) time it came out.
func getAt(t *testing.T, q *Queue[string]) (string, time.Time) {
	t.Helper()
	k, err := q.Get(context.Background())
	require.NoError(t, err)
	return k, time.Now()
}

func TestAddAfterHandsOutAtDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newTestQueue()
		start := time.Now()
		q.AddWith("b", AddOptions{After: 2 * time.Second})
		q.AddWith("a", AddOptions{After: time.Second})
		q.AddWith("now", AddOptions{After: 0}) // no delay: ready at once
		require.Equal(t, 1, q.View().Len())
		k, at := getAt(t, q)
		require.Equal(t, "now", k)
		require.Equal(t, start, at)
		k, at = getAt(t, q)
		require.Equal(t, "a", k)
		require.Equal(t, time.Second, at.Sub(start))
		k, at = getAt(t, q)
		require.Equal(t, "b", k)
		require.Equal(t, 2*time.Second, at.Sub(start))
		q.ShutDown()
	})
}

func TestRepeatedDelaysKeepEarliestDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newTestQueue()
		start := time.Now()
		q.AddWith("a", AddOptions{After: 3 * time.Second})
		q.AddWith("a", AddOptions{After: time.Second})      // earlier: moves the deadline
		q.AddWith("a", AddOptions{After: 10 * time.Second}) // later: ignored
		q.AddWith("a", AddOptions{After: 2 * time.Second})  // later: ignored
		k, at := getAt(t, q)
		require.Equal(t, "a", k)
		require.Equal(t, time.Second, at.Sub(start))
		q.Done("a")
		// Nothing else is queued: the later delays did not leave copies.
		advance(time.Minute) // fake time inside the bubble
		require.Zero(t, q.View().Len())
		require.Empty(t, q.View().Snapshot())
	})
}

// An immediate Add of a delayed key hands it out once, now, and cancels
// the delay (client-go hands such a key out twice).
func TestAddCancelsTheKeysDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newTestQueue()
		q.AddWith("a", AddOptions{After: time.Second})
		q.Add("a")
		require.Equal(t, "a", mustGet(t, q))
		q.Done("a")
		advance(time.Hour)
		require.Zero(t, q.View().Len(), "the cancelled delay still fired")
		require.Empty(t, q.View().Snapshot())
	})
}

func TestAddAfterOfWaitingKeyIsNoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newTestQueue()
		q.Add("a")
		q.AddWith("a", AddOptions{After: time.Second})
		require.Equal(t, "a", mustGet(t, q))
		q.Done("a")
		advance(time.Hour)
		require.Zero(t, q.View().Len())
	})
}

// A delay that comes due while the key is processing marks it dirty: it is
// handed out again after Done, never concurrently.
func TestDelayDueWhileProcessingMarksDirtyAndHandsOutAfterDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newTestQueue()
		q.Add("a")
		require.Equal(t, "a", mustGet(t, q))
		q.AddWith("a", AddOptions{After: time.Second})
		snap := q.View().Snapshot()
		require.Equal(t, Processing, snap[0].State)
		require.False(t, snap[0].Until.IsZero())
		advance(2 * time.Second)
		require.Zero(t, q.View().Len())
		require.True(t, q.View().Snapshot()[0].Dirty)
		q.Done("a")
		require.Equal(t, "a", mustGet(t, q))
		q.Done("a")
	})
}

// A delay not yet due when the key is Done keeps the key delayed: it is
// handed out at its deadline, not at Done.
func TestDelayNotDueAtDoneHandsTheKeyOutAtItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newTestQueue()
		start := time.Now()
		q.Add("a")
		require.Equal(t, "a", mustGet(t, q))
		q.AddWith("a", AddOptions{After: time.Second})
		q.Done("a")
		require.Equal(t, Delayed, q.View().Snapshot()[0].State)
		k, at := getAt(t, q)
		require.Equal(t, "a", k)
		require.Equal(t, time.Second, at.Sub(start))
	})
}

// Delays use one timer for the whole queue: many delayed keys start no
// goroutine, and AddAfter never blocks.
func TestDelaysUseNoGoroutinePerKey(t *testing.T) {
	q := newTestQueue()
	before := runtime.NumGoroutine()
	for i := range 10000 {
		q.AddWith(string(rune('a'+i%26))+string(rune(i)), AddOptions{After: time.Hour})
	}
	require.LessOrEqual(t, runtime.NumGoroutine(), before)
	q.mu.Lock()
	require.Equal(t, 10000, q.delayed.Len())
	q.mu.Unlock()
	q.ShutDown()
	left, err := q.Drain(context.Background())
	require.NoError(t, err)
	require.Len(t, left, 10000)
}

// Remove forgets waiting and delayed keys, and the queued re-add of a key
// in flight (dirty or delayed); the worker holding it still finishes and
// calls Done, and the key is not handed out again.
func TestRemoveDropsWaitingDelayedAndDirtyKeysButLetsInFlightWorkFinish(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newTestQueue()
		q.Add("waiting")
		q.AddWith("delayed", AddOptions{After: time.Second})
		q.Add("busy")
		q.Add("other")
		// Hand out "busy" (first after "waiting" is removed).
		q.Remove("waiting")
		require.Equal(t, "busy", mustGet(t, q))
		q.Add("busy")                                     // dirty
		q.AddWith("busy", AddOptions{After: time.Second}) // no-op: already dirty
		q.Remove("busy")
		q.Remove("delayed")
		q.Remove("unknown")
		require.Equal(t, []string{"other", "busy"}, keysOf(q.View().Snapshot()))
		q.Done("busy") // in-flight work finishes normally, and is not requeued
		advance(time.Hour)
		require.Equal(t, []string{"other"}, keysOf(q.View().Snapshot()))
		require.Equal(t, "other", mustGet(t, q))
		q.Done("other")
		require.Empty(t, q.View().Snapshot())
	})
}

func keysOf(items []Item[string]) []string {
	var keys []string
	for _, it := range items {
		keys = append(keys, it.Key)
	}
	return keys
}

// A delay of "forever" saturates instead of wrapping into the past, and
// does not hold back keys with ordinary delays.
func TestHugeDelayDoesNotBlockOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newTestQueue()
		start := time.Now()
		q.AddWith("forever", AddOptions{After: time.Duration(math.MaxInt64)})
		q.AddWith("soon", AddOptions{After: 10 * time.Millisecond})
		k, at := getAt(t, q)
		require.Equal(t, "soon", k)
		require.Equal(t, 10*time.Millisecond, at.Sub(start))
		require.Equal(t, Delayed, q.View().Snapshot()[0].State)
		q.ShutDown()
	})
}
