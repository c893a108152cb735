package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/storetest"
	"github.com/stretchr/testify/require"
)

func TestViewConformance(t *testing.T) {
	storetest.RunWith(t, func(t *testing.T) store.Store[*storetest.Value] {
		raw := store.NewMemory[[]byte]()
		t.Cleanup(func() { raw.Close() })
		return store.NewView[*storetest.Value](raw, nil)
	}, storetest.Options{RecordsCauses: true})
}

// Views of different types over one byte store share guards: a write
// through one view can be fenced on a key written through another.
func TestViewsOfOneByteStoreShareGuards(t *testing.T) {
	ctx := context.Background()
	raw := store.NewMemory[[]byte]()
	type lease struct{ Holder string }
	type app struct{ Replicas int }
	leases := store.NewView[lease](raw, nil)
	apps := store.NewView[app](raw, nil)

	term, err := leases.Create(ctx, "lease", lease{Holder: "a"})
	require.NoError(t, err)
	guard := store.Guard{Key: "lease", Revision: term.CreateRevision, Created: true}
	obj, err := apps.Create(ctx, "apps/web", app{Replicas: 3}, guard)
	require.NoError(t, err)

	// A new term: the old holder's guarded write is rejected.
	_, err = leases.Delete(ctx, "lease", term.Revision)
	require.NoError(t, err)
	_, err = leases.Create(ctx, "lease", lease{Holder: "b"})
	require.NoError(t, err)
	_, err = apps.Update(ctx, "apps/web", app{Replicas: 5}, obj.Revision, guard)
	require.ErrorIs(t, err, store.ErrGuardFailed)
	got, err := apps.Get(ctx, "apps/web")
	require.NoError(t, err)
	require.Equal(t, 3, got.Value.Replicas)
}

// A value the codec cannot decode is an error naming its key from Get, List
// and the watch (which ends with it), never a zero value, and not mistaken
// for an outage.
func TestViewRefusesUndecodableValuesOnGetListAndWatch(t *testing.T) {
	ctx := context.Background()
	raw := store.NewMemory[[]byte]()
	_, err := raw.Create(ctx, "k", []byte("not json"))
	require.NoError(t, err)
	v := store.NewView[int](raw, nil)
	_, err = v.Get(ctx, "k")
	require.ErrorContains(t, err, `"k"`)
	_, _, err = v.List(ctx, "")
	require.ErrorContains(t, err, `"k"`)
	w, err := v.Watch(ctx, "", 0)
	require.NoError(t, err)
	for ev := range w.Events() {
		t.Fatalf("undecodable value delivered as %+v", ev)
	}
	require.ErrorContains(t, w.Err(), `"k"`)
	require.False(t, errors.Is(w.Err(), store.ErrUnavailable))
}

// Stop is safe to call from several goroutines at once, and a stopped
// watch ends with a nil error.
func TestViewWatcherStopIsSafeConcurrentlyAndEndsWithNilError(t *testing.T) {
	raw := store.NewMemory[[]byte]()
	v := store.NewView[int](raw, nil)
	for range 200 {
		w, err := v.Watch(context.Background(), "", 0)
		require.NoError(t, err)
		require.NoError(t, w.Err(), "Err of a running watch")
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(w.Stop)
		}
		wg.Wait()
		for range w.Events() {
		}
		require.NoError(t, w.Err())
	}
}
