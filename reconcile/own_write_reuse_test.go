package reconcile

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/store"
)

// TestOwnWriteRecordsAreReusedWithoutCarryingOver: the records of writes
// made through Request.Store are recycled from key to key; nothing of a
// key's writes (its pending echoes above all) may carry over to the next
// key that gets the record. Every change made by someone else wakes its key
// exactly once, and no status write's echo wakes its key again.
func TestOwnWriteRecordsAreReusedWithoutCarryingOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		const keys = 20
		for i := range keys {
			put(t, s, fmt.Sprintf("k%02d", i), &item{Want: 1})
		}
		var mu sync.Mutex
		runs := map[string]int{}
		rec := ReconcilerFunc[*item](func(ctx context.Context, req Request[*item]) (Result, error) {
			mu.Lock()
			runs[req.Key]++
			mu.Unlock()
			if req.Deleted || req.Object.Value.Seen == req.Object.Value.Want {
				return Result{}, nil
			}
			next := *req.Object.Value
			next.Seen = next.Want
			_, err := req.Store.Update(ctx, req.Key, &next, req.Object.Revision)
			return Result{}, err
		})
		c, err := New(s, rec, Options[*item]{Name: "reuse", Workers: 4})
		require.NoError(t, err)
		defer start(t, c)()
		synctest.Wait()
		rng := rand.New(rand.NewPCG(3, 5))
		for round := range 200 {
			key := fmt.Sprintf("k%02d", rng.IntN(keys))
			mu.Lock()
			before := runs[key]
			mu.Unlock()
			obj, err := s.Get(context.Background(), key)
			require.NoError(t, err)
			next := *obj.Value
			next.Want++
			_, err = s.Update(context.Background(), key, &next, obj.Revision)
			require.NoError(t, err)
			synctest.Wait()
			mu.Lock()
			require.Equal(t, before+1, runs[key], "round %d: %s reconciled %d times after one change", round, key, runs[key]-before)
			mu.Unlock()
			got, err := s.Get(context.Background(), key)
			require.NoError(t, err)
			require.Equal(t, got.Value.Want, got.Value.Seen, "round %d: %s did not converge", round, key)
		}
		_, _, free := c.led.own.sizes()
		require.NotZero(t, free, "no record of writes was kept for reuse")
		require.LessOrEqual(t, free, maxFreeOwn)
	})
}

// TestWriteBookkeepingAllocatesNothingOnceWarm: recording a write made
// through Request.Store reuses a record and its echo buffer.
func TestWriteBookkeepingAllocatesNothingOnceWarm(t *testing.T) {
	c := idleController[*item](t, "allocs")
	write := func() {
		ow := c.beginWrite("k")
		c.endWrite("k", ow, store.Object[*item]{Key: "k"}, false, nil) // nothing written: forgotten at once
	}
	write()
	require.Zero(t, testing.AllocsPerRun(100, write))
}

// TestARecycledWriteRecordStartsEmpty: a record of writes that served one
// key comes back for the next with nothing of the first: no object to hand
// to its reconciles (a reconcile of the second key must not receive the
// first key's object) and no echoes to suppress.
func TestARecycledWriteRecordStartsEmpty(t *testing.T) {
	c := idleController[*item](t, "recycle")
	a := store.Object[*item]{Key: "a", Value: &item{Want: 7}, Revision: 5}
	first := c.beginWrite("a")
	c.endWrite("a", first, a, false, nil)
	c.mu.Lock()
	require.True(t, c.led.ownChange(&change[*item]{Cur: a, HasCur: true}, true), "the write's echo was not recognised")
	c.mu.Unlock()

	second := c.beginWrite("b")
	defer c.endWrite("b", second, store.Object[*item]{}, false, store.ErrConflict)
	require.Same(t, first, second, "the record was not reused")
	c.mu.Lock()
	defer c.mu.Unlock()
	cached := store.Object[*item]{Key: "b", Value: &item{Want: 1}, Revision: 2}
	obj, deleted := c.led.ownObject("b", cached, true)
	require.Equal(t, cached, obj, "b's reconcile would be handed a's object")
	require.False(t, deleted)
	require.Empty(t, second.echoes)
	require.Empty(t, second.held)
}

// TestOwnWriteMapIsRebuiltSmallAfterABurstOfEchoes: a burst of status
// writes can leave a record per key waiting for its echo (the watch lags
// behind the writes); Go maps never give memory back, so once the echoes
// have brought the records down to an eighth of their peak, the map is
// rebuilt at its size. The records left still recognise their echoes.
func TestOwnWriteMapIsRebuiltSmallAfterABurstOfEchoes(t *testing.T) {
	c := idleController[string](t, "burst")
	const n = 20_000
	obj := func(i int) store.Object[string] {
		return store.Object[string]{Key: fmt.Sprintf("k%05d", i), Value: "v", Revision: int64(i + 1)}
	}
	for i := range n {
		o := obj(i)
		c.endWrite(o.Key, c.beginWrite(o.Key), o, false, nil)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	held, peak, _ := c.led.own.sizes()
	require.Equal(t, n, held, "every write waits for its echo")
	require.Equal(t, n, peak)
	echo := func(i int) bool {
		return c.led.ownChange(&change[string]{Cur: obj(i), HasCur: true}, true)
	}
	for i := range n - 100 {
		require.True(t, echo(i), "echo of write %d", i)
	}
	held, peak, _ = c.led.own.sizes()
	require.Less(t, peak, n/8, "the map of writes was not rebuilt")
	require.Equal(t, 100, held)
	for i := n - 100; i < n; i++ {
		require.True(t, echo(i), "echo of write %d after the rebuild", i)
	}
	held, _, _ = c.led.own.sizes()
	require.Zero(t, held)
}

// sizes returns how many keys the table holds records for, its peak since
// the last rebuild and how many records it keeps for reuse.
func (t *ownTable[T]) sizes() (held, peak, free int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.keys), t.peak, len(t.free)
}
