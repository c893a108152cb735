package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMemoryGivesBackTheSlotsOfDeletedObjects: once most of its objects
// are deleted, the store's map is rebuilt at its size; the objects left
// are read, listed and updated as before.
func TestMemoryGivesBackTheSlotsOfDeletedObjects(t *testing.T) {
	ctx := context.Background()
	m := NewMemory[int]()
	defer m.Close()
	const n = 20_000
	for i := range n {
		_, err := m.Create(ctx, fmt.Sprintf("k%05d", i), i)
		require.NoError(t, err)
	}
	for i := range n - 10 {
		_, err := m.Delete(ctx, fmt.Sprintf("k%05d", i), int64(i+1))
		require.NoError(t, err)
	}
	m.mu.RLock()
	peak := m.peak
	m.mu.RUnlock()
	require.Less(t, peak, n/8, "the map of objects was not rebuilt")
	objs, _, err := m.List(ctx, "")
	require.NoError(t, err)
	require.Len(t, objs, 10)
	for i := n - 10; i < n; i++ {
		key := fmt.Sprintf("k%05d", i)
		obj, err := m.Get(ctx, key)
		require.NoError(t, err)
		require.Equal(t, i, obj.Value)
		_, err = m.Update(ctx, key, -i, obj.Revision)
		require.NoError(t, err)
	}
}
