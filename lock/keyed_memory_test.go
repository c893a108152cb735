package lock

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// heapInUse returns the bytes of heap in use after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// TestKeyedMemoryFlatOverDistinctKeys: a million distinct keys, each locked
// and unlocked, leave no entry behind and no heap growth.
func TestKeyedMemoryFlatOverDistinctKeys(t *testing.T) {
	n := 1_000_000
	if testing.Short() {
		n = 100_000
	}
	var k Keyed[int]
	before := heapInUse()
	ctx := t.Context()
	for i := range n {
		if i%2 == 0 {
			if err := k.Lock(ctx, i); err != nil {
				t.Fatal(err)
			}
		} else if !k.TryLock(i) {
			t.Fatalf("key %d is taken", i)
		}
		if err := k.Unlock(i); err != nil {
			t.Fatal(err)
		}
	}
	require.Zero(t, k.size())
	after := heapInUse()
	require.Less(t, int64(after)-int64(before), int64(1<<20),
		"heap grew from %d to %d bytes over %d distinct keys", before, after, n)
	runtime.KeepAlive(&k)
}

// TestKeyedMemoryReturnsAfterWave: many keys held at once, then all freed,
// give their memory back, although Go maps never shrink by themselves.
func TestKeyedMemoryReturnsAfterWave(t *testing.T) {
	const n = 100_000
	var k Keyed[int]
	before := heapInUse()
	for i := range n {
		require.True(t, k.TryLock(i))
	}
	held := heapInUse()
	require.Greater(t, held-before, uint64(n*32), "the wave should cost memory while held")
	for i := range n {
		require.NoError(t, k.Unlock(i))
	}
	require.Zero(t, k.size())
	after := heapInUse()
	require.Less(t, int64(after)-int64(before), int64(512<<10),
		"heap was %d bytes before the wave, %d while held, %d after", before, held, after)
	runtime.KeepAlive(&k)
}

// TestKeyedShrinksPartially: a map emptied to an eighth of its peak is
// rebuilt; the keys still held remain held.
func TestKeyedShrinksPartially(t *testing.T) {
	const n = 10_000
	var k Keyed[int]
	for i := range n {
		require.True(t, k.TryLock(i))
	}
	for i := n / 10; i < n; i++ {
		require.NoError(t, k.Unlock(i))
	}
	require.Equal(t, n/10, k.size())
	require.LessOrEqual(t, k.peak, n/8, "the map was not rebuilt")
	for i := range n / 10 {
		require.False(t, k.TryLock(i), "key %d lost its holder in the rebuild", i)
		require.NoError(t, k.Unlock(i))
	}
	require.Zero(t, k.size())
}
