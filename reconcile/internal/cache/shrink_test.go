package cache

import (
	"fmt"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// TestIndexMapsAreRebuiltSmallAfterMostObjectsAreDeleted: an index whose
// values and keys grew with a burst of objects gives their slots back once
// most are deleted, and still finds the objects left.
func TestIndexMapsAreRebuiltSmallAfterMostObjectsAreDeleted(t *testing.T) {
	ix := newIndex(func(obj store.Object[string]) []string {
		return []string{"all", "own:" + obj.Key} // one shared value, one per object
	})
	const n = 20_000
	obj := func(i int) store.Object[string] {
		return store.Object[string]{Key: fmt.Sprintf("k%05d", i), Value: "v"}
	}
	for i := range n {
		ix.add(obj(i))
	}
	require.Equal(t, n+1, ix.peak)
	require.Equal(t, n, ix.keys["all"].peak)
	for i := range n - 10 {
		ix.remove(obj(i))
	}
	require.Less(t, ix.peak, n/8, "the map of values was not rebuilt")
	require.Less(t, ix.keys["all"].peak, n/8, "the shared value's set was not rebuilt")
	require.Len(t, ix.keys, 11)
	require.Len(t, ix.keys["all"].keys, 10)
	for i := n - 10; i < n; i++ {
		require.Contains(t, ix.keys["all"].keys, obj(i).Key)
		require.Contains(t, ix.keys["own:"+obj(i).Key].keys, obj(i).Key)
	}
}

// TestCacheMapsAreRebuiltSmallAfterMostObjectsAreDeleted: once most of
// the objects are deleted, in watch batches, and their tombstones let go,
// the cache's map of objects and its tombstones have given their slots
// back (rebuilt at their size), and the objects left are still cached.
func TestCacheMapsAreRebuiltSmallAfterMostObjectsAreDeleted(t *testing.T) {
	const n = 20_000
	in := New[*item](nil, Options[*item]{Tombstones: true})
	objs := make([]store.Object[*item], n)
	for i := range objs {
		objs[i] = store.Object[*item]{Key: fmt.Sprintf("k%05d", i), Value: &item{Want: 1}, Revision: 1}
	}
	in.Replace(objs, 1, "", false)
	rev := int64(1)
	for from := 0; from < n-100; from += maxBatch {
		var batch []store.Event[*item]
		for i := from; i < min(from+maxBatch, n-100); i++ {
			rev++
			batch = append(batch, store.Event[*item]{Type: store.Deleted, Object: store.Object[*item]{Key: objs[i].Key, Revision: rev}})
		}
		in.Apply(batch, true)
		for _, ev := range batch {
			in.ForgetTombstone(ev.Object.Key, ev.Object.Revision)
		}
	}
	in.mu.RLock()
	defer in.mu.RUnlock()
	require.Len(t, in.objects, 100)
	require.Less(t, in.objectsPeak, n/8, "the map of objects was not rebuilt")
	require.Empty(t, in.tombstones, "tombstones outlived their reconciled deletions")
	require.Less(t, in.tombstonesPeak, n/8, "the tombstones were not rebuilt")
	for i := n - 100; i < n; i++ {
		require.Contains(t, in.objects, fmt.Sprintf("k%05d", i))
	}
}
