package store_test

import (
	"fmt"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/storetest"
	"github.com/stretchr/testify/require"
)

// TestAWatcherCatchesUpPastTheHistoryUntilDeletesAreForgotten: a
// catching-up watch over a memory store whose history is far smaller than
// the writes made while it does not read still leads to the store's
// state; Diff fails with ErrCompacted only once a delete after its
// revision has been forgotten (WithTombstones) or compacted.
func TestAWatcherCatchesUpPastTheHistoryUntilDeletesAreForgotten(t *testing.T) {
	ctx := t.Context()
	s := store.NewMemory[int](store.WithHistory(50), store.WithWatchLag(5), store.WithTombstones(100))
	defer s.Close()
	w, err := store.WatchCatchingUp(ctx, s, "", 0)
	require.NoError(t, err)
	defer w.Stop()
	objs := map[string]store.Object[int]{}
	for i := range 500 {
		k := fmt.Sprintf("k%d", i%30)
		if o, ok := objs[k]; ok && i%7 == 0 {
			_, err := s.Delete(ctx, k, o.Revision)
			require.NoError(t, err)
			delete(objs, k)
			continue
		}
		if o, ok := objs[k]; ok {
			objs[k], err = s.Update(ctx, k, i, o.Revision)
		} else {
			objs[k], err = s.Create(ctx, k, i)
		}
		require.NoError(t, err)
	}
	now, err := s.Revision(ctx)
	require.NoError(t, err)
	seen := map[string]store.Object[int]{}
	for len(seen) != len(objs) || !sameObjects(seen, objs) {
		ev := storetest.NextEvent(t, w)
		require.LessOrEqual(t, ev.Object.Revision, now)
		if ev.Type == store.Deleted {
			delete(seen, ev.Object.Key)
		} else {
			seen[ev.Object.Key] = ev.Object
		}
	}

	_, _, err = s.Diff(ctx, "", 0)
	require.NoError(t, err, "every delete is remembered (about 70 of 100)")
	for i := range 100 {
		o, err := s.Create(ctx, fmt.Sprintf("tmp%d", i), i)
		require.NoError(t, err)
		now, err = s.Delete(ctx, o.Key, o.Revision)
		require.NoError(t, err)
	}
	_, _, err = s.Diff(ctx, "", 0)
	require.ErrorIs(t, err, store.ErrCompacted, "deletes after 0 were forgotten")
	require.NoError(t, s.Compact(ctx, now-1))
	_, _, err = s.Diff(ctx, "", now-2)
	require.ErrorIs(t, err, store.ErrCompacted, "Compact forgets deletes too")
	changes, rev, err := s.Diff(ctx, "", now-1)
	require.NoError(t, err)
	require.Equal(t, now, rev)
	require.Len(t, changes, 1)
}

func sameObjects(a, b map[string]store.Object[int]) bool {
	for k, o := range b {
		if a[k] != o {
			return false
		}
	}
	return true
}

// TestACatchingUpWatchClaimsProgressOnlyIfItsStoreCanAnswer: over a
// Differ whose watches cannot answer progress requests (a View over such
// a byte store), WatchCatchingUp's watcher does not implement
// ProgressRequester, so a consumer does not wait for answers that never
// come; over the memory store it does.
func TestACatchingUpWatchClaimsProgressOnlyIfItsStoreCanAnswer(t *testing.T) {
	ctx := t.Context()
	raw := store.NewMemory[[]byte]()
	defer raw.Close()
	w, err := store.WatchCatchingUp[int](ctx, store.NewView[int](noProgressStore{raw}, nil), "", 0)
	require.NoError(t, err)
	defer w.Stop()
	_, ok := w.(store.ProgressRequester)
	require.False(t, ok, "over a store whose watches cannot answer")

	m := store.NewMemory[int]()
	defer m.Close()
	w, err = store.WatchCatchingUp[int](ctx, m, "", 0)
	require.NoError(t, err)
	defer w.Stop()
	_, ok = w.(store.ProgressRequester)
	require.True(t, ok, "over the memory store")
}
