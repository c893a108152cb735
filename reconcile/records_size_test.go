package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/store"
)

// TestPerKeyRecordsStaySmall: the ledger keeps one record per key
// reconciled, one pending change per key with a change not yet reconciled
// and one record of own writes per key written until its echo arrives, and
// each reconcile has a context of its own; a field added carelessly would
// grow every key's cost.
func TestPerKeyRecordsStaySmall(t *testing.T) {
	require.LessOrEqual(t, unsafe.Sizeof(record{}), uintptr(80), "one per key reconciled: keep it small")
	require.LessOrEqual(t, unsafe.Sizeof(pendingChange{}), uintptr(56), "one per key with a change not yet reconciled: times as monoTime, not time.Time")
	require.LessOrEqual(t, unsafe.Sizeof(ownWrite[*int]{}), uintptr(96), "one per key written through Request.Store until its echo arrives")
	require.LessOrEqual(t, unsafe.Sizeof(reconcileContext{}), uintptr(64), "one per reconcile")
}

// TestPerKeyMapsAreRebuiltSmallAfterABurstConverges: Go maps never give
// memory back, so once the pending changes and last reconciles of a burst
// of keys are forgotten down to an eighth of their peak, the maps are
// rebuilt at their size (their peak resets), keeping every entry left.
func TestPerKeyMapsAreRebuiltSmallAfterABurstConverges(t *testing.T) {
	c := idleController[string](t, "burst")
	const n = 20_000
	c.mu.Lock()
	defer c.mu.Unlock()
	led := c.led
	now := time.Now()
	for i := range n {
		key := fmt.Sprintf("k%05d", i)
		led.changed(key, int64(i+1), led.mono(now))
		led.recordLast(led.recordOf(key), ending{key: key, revision: int64(i + 1), outcome: Failure, err: errors.New("error " + key), start: now}, false, now)
	}
	require.Equal(t, n, led.pendPeak)
	require.Equal(t, n, led.recs.peak)
	require.Equal(t, n, led.errsPeak)
	for i := range n - 100 {
		led.dropped(fmt.Sprintf("k%05d", i))
	}
	require.Less(t, led.pendPeak, n/8, "the pending changes were not rebuilt")
	require.Less(t, cap(led.pend), n/8, "the pending changes kept their room")
	require.Less(t, led.recs.peak, n/8, "the records were not compacted")
	require.Less(t, len(led.recs.chunks)*recordChunk, n/8+recordChunk, "the records kept their chunks")
	require.Less(t, led.errsPeak, n/8, "the last-error map was not rebuilt")
	require.Len(t, led.errs, 100)
	require.Len(t, led.pend, 100)
	require.Equal(t, 100, led.keys())
	for i := n - 100; i < n; i++ {
		key := fmt.Sprintf("k%05d", i)
		r := led.lookup(key)
		require.NotNil(t, r, key)
		require.Equal(t, int64(i+1), led.pendingOf(r).first, key)
		require.Equal(t, int64(i+1), r.revision, key)
		require.Equal(t, "error "+key, led.errs[key], key)
	}
	requireLedgerConsistent(t, led)
}

// TestTheRoomReservedForAListIsKeptUntilItsChangesAreSeen: the room the
// ledger makes for an initial list is not given back while the list is
// still being observed, although its first keys are reconciled (and most
// of what is held so far let go) before the rest arrive: else the pending
// changes and the records would grow again, doubling after doubling,
// through the rest of the list. Once the list's changes are seen, a
// drained burst gives its room back as before.
func TestTheRoomReservedForAListIsKeptUntilItsChangesAreSeen(t *testing.T) {
	c := idleController[string](t, "reserved")
	const n, chunk = 20_000, 256
	c.mu.Lock()
	defer c.mu.Unlock()
	led := c.led
	now := led.mono(time.Now())
	led.reserve(n)
	require.Equal(t, n, cap(led.pend))
	pend := &led.pend[:1][0] // the reserved array: the pending changes stay in it
	for from := 0; from < n; from += chunk {
		changes := make([]change[string], 0, chunk)
		for i := from; i < min(from+chunk, n); i++ {
			changes = append(changes, change[string]{Cur: store.Object[string]{Key: fmt.Sprintf("k%05d", i), Revision: int64(i + 1)}, HasCur: true})
		}
		led.batchObserved(changes)
		for i := range changes {
			led.changed(changes[i].Key(), changes[i].Revision(), now)
		}
		// The workers keep up: all but the chunk's last key are let go.
		for i := range len(changes) - 1 {
			led.dropped(changes[i].Key())
		}
		if led.reserved > 0 {
			require.Same(t, pend, &led.pend[:1][0], "the pending changes were moved out of the reserved room after %d keys", from+len(changes))
			require.Equal(t, n, led.recs.peak, "the records were compacted after %d keys", from+len(changes))
		}
		requireLedgerConsistent(t, led)
	}
	require.Zero(t, led.reserved)
	left := led.keys()
	for i := range n {
		led.dropped(fmt.Sprintf("k%05d", i))
		if i == n/2 {
			require.Less(t, cap(led.pend), n/8, "the drained burst kept its room once the list was seen")
		}
	}
	require.Positive(t, left)
	require.Zero(t, led.keys())
	requireLedgerConsistent(t, led)
}

// TestCacheMapsAreRebuiltSmallAfterMostObjectsAreDeleted: once most of
// the objects are deleted and their deletions reconciled, the cache's
// tombstones are gone and the objects left are still cached and
// reconciled. That its maps then give their slots back (rebuilt at their
// size) is the cache's own test of the same name (internal/cache).
func TestCacheMapsAreRebuiltSmallAfterMostObjectsAreDeleted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 20_000
		s := storeWith(t, n)
		c, err := New(s, ReconcilerFunc[*item](func(context.Context, Request[*item]) (Result, error) {
			return Result{}, nil
		}), Options[*item]{Name: "deletions", Workers: 4})
		require.NoError(t, err)
		defer start(t, c)()
		var rev int64
		for i := range n - 100 {
			rev = del(t, s, fmt.Sprintf("k%05d", i))
		}
		require.NoError(t, c.WaitForRevision(context.Background(), rev))
		synctest.Wait()
		require.Len(t, c.Lister().List(), 100)
		require.Zero(t, c.cache.TombstoneCount(), "tombstones outlived their reconciled deletions")
		for i := n - 100; i < n; i++ {
			_, ok := c.Lister().Get(fmt.Sprintf("k%05d", i))
			require.True(t, ok)
		}
	})
}

// TestBurstMapsAreRebuiltSmallOnceTheBurstIsOver: the maps that hold a key
// only while something is wrong with it (its write conflicted, its
// reconciles fail) grow to every key in a burst (an outage fails them
// all) and are rebuilt small once the keys have recovered.
func TestBurstMapsAreRebuiltSmallOnceTheBurstIsOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 10_000
		s := storeWith(t, n)
		var mu sync.Mutex
		attempts := map[string]int{}
		rec := ReconcilerFunc[*item](func(_ context.Context, req Request[*item]) (Result, error) {
			mu.Lock()
			attempts[req.Key]++
			a := attempts[req.Key]
			mu.Unlock()
			switch a {
			case 1:
				return Result{}, fmt.Errorf("status: %w", store.ErrConflict)
			case 2:
				return Result{}, errors.New("the outage")
			}
			return Result{}, nil
		})
		c, err := New(s, rec, Options[*item]{Name: "bursts", Workers: 4,
			RateLimiter: queue.NewExponential[string](time.Second, time.Second, 0)})
		require.NoError(t, err)
		defer start(t, c)()
		for range 10 { // the conflict's and the failure's retries, on the fake clock
			advance(time.Second)
			synctest.Wait()
		}
		mu.Lock()
		for i := range n {
			require.Equal(t, 3, attempts[fmt.Sprintf("k%05d", i)])
		}
		mu.Unlock()
		c.mu.Lock()
		defer c.mu.Unlock()
		require.Empty(t, c.led.failing)
		c.led.recs.each(func(r *record) { require.False(t, r.has(conflicted), r.key) })
		require.Less(t, c.led.failingPeak, n/8, "the failing keys' map was not rebuilt")
		requireLedgerConsistent(t, c.led)
	})
}

// storeWith returns a memory store holding n objects, keys k00000 on.
func storeWith(t *testing.T, n int) *store.Memory[*item] {
	t.Helper()
	s := store.NewMemory[*item]()
	for i := range n {
		put(t, s, fmt.Sprintf("k%05d", i), &item{Want: 1})
	}
	return s
}
