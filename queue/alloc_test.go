package queue

import (
	"context"
	"fmt"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/internal/mapshrink"
)

// Steady state allocates nothing per Add, Get and Done, with or without a
// priority, and for a key re-added while processing.
func TestSteadyStateAllocatesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts are checked in the full run")
	}
	q := New(Options[int]{})
	ctx := context.Background()
	keys := 256
	warm := func() {
		for i := range keys {
			q.Add(i)
		}
		for range keys {
			k, _ := q.Get(ctx)
			q.Done(k)
		}
	}
	warm()
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		i = (i + 1) % keys
		q.Add(i)
		q.AddWith(i+keys, AddOptions{Priority: PriorityHigh})
		k, _ := q.Get(ctx)
		q.Add(k) // dirty
		q.Done(k)
		k2, _ := q.Get(ctx)
		q.Done(k2)
		k3, _ := q.Get(ctx)
		q.Done(k3)
	})
	require.Zero(t, allocs)
	require.Zero(t, q.View().Len())
}

// A worker that reads its keys' tags and hint through GetBatch of one key,
// giving its buffer back each time, allocates nothing in steady state, and
// neither do View's Len and Queued, which the controller asks on its hot
// path.
func TestAGetBatchOfOneAndTheViewAllocateNothingInSteadyState(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts are checked in the full run")
	}
	q := New(Options[int]{})
	ctx := context.Background()
	keys := 256
	var buf []Handout[int]
	for i := range keys {
		q.AddWith(i, AddOptions{Tags: 1, Hint: 1})
	}
	for range keys {
		buf, _ = q.GetBatch(ctx, 1, buf[:0])
		q.Done(buf[0].Key)
	}
	i, queued := 0, 0
	allocs := testing.AllocsPerRun(1000, func() {
		i = (i + 1) % keys
		q.AddWith(i, AddOptions{Tags: 2, Hint: 3})
		if q.View().Queued(i) {
			queued++
		}
		buf, _ = q.GetBatch(ctx, 1, buf[:0])
		queued += q.View().Len()
		q.Done(buf[0].Key)
	})
	require.Zero(t, allocs)
	require.Equal(t, 1001, queued, "every add was queued until its hand-out")
	require.Zero(t, q.View().Len())
}

// After a burst drains, the queue's map and heap arrays are rebuilt small,
// so the memory they held goes back to the heap.
func TestMemoryGivenBackAfterBurst(t *testing.T) {
	for _, n := range []int{10_000, 200_000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) { testMemoryGivenBackAfterBurst(t, n) })
	}
}

// burst adds keys 0 to n-1, then hands each out and marks it done.
func burst(t *testing.T, q *Queue[int], n int) {
	t.Helper()
	for i := range n {
		q.Add(i)
	}
	for range n {
		k, err := q.Get(context.Background())
		require.NoError(t, err)
		q.Done(k)
	}
}

func testMemoryGivenBackAfterBurst(t *testing.T, n int) {
	q := New(Options[int]{})
	burst(t, q, n)
	q.mu.Lock()
	defer q.mu.Unlock()
	require.LessOrEqual(t, q.peak, mapshrink.Floor, "the key map was not rebuilt")
	for _, l := range q.ready.levels {
		require.LessOrEqual(t, len(l.ring), mapshrink.Floor, "the ready ring kept its array")
	}
	require.LessOrEqual(t, len(q.free), mapshrink.Floor, "the records kept for reuse were not trimmed")
}

// TestMemoryGivenBackAfterBurstWhoseKeysAreNotAllDone: keys a burst
// leaves behind (one still processing, a few waiting for a retry) do not
// keep the burst's memory: the map is rebuilt once the rest are done, and
// the keys left are handed out as before.
func TestMemoryGivenBackAfterBurstWhoseKeysAreNotAllDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 20_000
		q := New(Options[int]{})
		for i := range n {
			q.Add(i)
		}
		busy, err := q.Get(context.Background())
		require.NoError(t, err)
		for range n - 1 {
			k, err := q.Get(context.Background())
			require.NoError(t, err)
			if k%5000 == 1 {
				q.AddWith(k, AddOptions{After: time.Second}) // a retry
			}
			q.Done(k)
		}
		q.mu.Lock()
		require.LessOrEqual(t, q.peak, mapshrink.Floor, "the key map was not rebuilt")
		require.LessOrEqual(t, len(q.free), mapshrink.Floor, "the records kept for reuse were not trimmed")
		require.Equal(t, 5, q.items.len())
		q.mu.Unlock()
		q.Add(busy)
		q.Done(busy)
		advance(time.Second)
		synctest.Wait()
		var got []int
		for q.View().Len() > 0 {
			k, err := q.Get(context.Background())
			require.NoError(t, err)
			got = append(got, k)
			q.Done(k)
		}
		require.ElementsMatch(t, []int{busy, 1, 5001, 10001, 15001}, got)
		q.ShutDown()
	})
}

// TestRecurringBurstsRebuildTheMapAHandfulOfTimes: a queue whose bursts
// come back again and again does not rebuild (and regrow) its key map once
// per burst: each rebuild waits for twice as many forgotten records as the
// one before, so 32 bursts cost at most 6 rebuilds, and the first drain
// still gives the memory back.
func TestRecurringBurstsRebuildTheMapAHandfulOfTimes(t *testing.T) {
	q := New(Options[int]{})
	for i := range 32 {
		burst(t, q, 10_000)
		if i == 0 {
			q.mu.Lock()
			require.Equal(t, uint(1), q.rebuilds, "the first drain did not give the memory back")
			q.mu.Unlock()
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	require.LessOrEqual(t, q.rebuilds, uint(6))
}

// As a burst drains, the records kept for reuse go to a list that is grown
// to its final size at the first Done, not doubled again and again.
func TestFreeListGrowsToThePeakAtOnce(t *testing.T) {
	q := New(Options[int]{})
	const n = 3 * minFreeItems
	for i := range n {
		q.Add(i)
	}
	grown := 0
	for range n - 1 {
		k, err := q.Get(context.Background())
		require.NoError(t, err)
		q.mu.Lock()
		before := cap(q.free)
		q.mu.Unlock()
		q.Done(k)
		q.mu.Lock()
		if cap(q.free) != before {
			grown++
			require.GreaterOrEqual(t, cap(q.free), n, "the list was grown short of the peak")
		}
		q.mu.Unlock()
	}
	require.LessOrEqual(t, grown, 1, "the list was grown more than once")
}

// TestGrowPlacesABurstWithoutRehashing: after Grow(n), adding n new keys
// (in batches, as a controller queues a list) never moves the index to a
// new table; Grow over keys already held makes room beyond them; and the
// room of a burst that came goes back once it has drained.
func TestGrowPlacesABurstWithoutRehashing(t *testing.T) {
	const n = 100_000
	q := New(Options[int]{})
	q.Add(-1)
	q.Grow(n)
	q.mu.Lock()
	slots := len(q.items.slots)
	q.mu.Unlock()
	require.Equal(t, 1<<18, slots, "the smallest table holding 100,001 keys below a load of 3/4")
	var adds []BatchAdd[int]
	for i := range n {
		adds = append(adds, BatchAdd[int]{Key: i})
		if len(adds) == 128 || i == n-1 {
			q.AddBatch(adds)
			adds = adds[:0]
			q.mu.Lock()
			require.Len(t, q.items.slots, slots, "the index was rehashed at %d keys", i+1)
			q.mu.Unlock()
		}
	}
	require.Equal(t, n+1, q.View().Len())
	for range n + 1 {
		k, err := q.Get(context.Background())
		require.NoError(t, err)
		q.Done(k)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	require.LessOrEqual(t, len(q.items.slots), 2*mapshrink.Floor, "the grown index was not given back")
}

// TestGrowIgnoresNoRoomAndCapsTooMuch: Grow of zero or fewer keys does
// nothing (on a zero Queue too), and an absurd count is capped instead of
// claiming the heap or panicking.
func TestGrowIgnoresNoRoomAndCapsTooMuch(t *testing.T) {
	var q Queue[string]
	q.Grow(0)
	q.Grow(-5)
	require.Nil(t, q.items.slots)
	q.Grow(math.MaxInt)
	require.Len(t, q.items.slots, 1<<23)
	q.Add("a")
	k, err := q.Get(context.Background())
	require.NoError(t, err)
	require.Equal(t, "a", k)
}
