package faultstore_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/faultstore"
	"github.com/converge-go/converge/store/storetest"
	"github.com/stretchr/testify/require"
)

// With BreakWatchEvery a watch ends with ErrUnavailable after about that
// many events, having delivered them in order; BreakWatches ends every
// open watch the same way.
func TestWatchesBreakAfterAboutBreakWatchEveryEventsOrOnDemand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem := store.NewMemory[int]()
		s := newStore(t, mem, faultstore.Options{Rand: seeded(1), Rates: faultstore.Rates{BreakWatchEvery: 4}})
		w, err := s.Watch(ctx, "", 0)
		require.NoError(t, err)
		for i := range 20 {
			_, err := mem.Create(ctx, fmt.Sprint("k", i), i)
			require.NoError(t, err)
		}
		n := 0
		for ev := range w.Events() {
			require.Equal(t, fmt.Sprint("k", n), ev.Object.Key, "events out of order")
			n++
		}
		require.ErrorIs(t, w.Err(), store.ErrUnavailable)
		require.GreaterOrEqual(t, n, 2)
		require.LessOrEqual(t, n, 6)

		require.NoError(t, s.SetRates(faultstore.Rates{}))
		w2, err := s.Watch(ctx, "", 0)
		require.NoError(t, err)
		s.BreakWatches()
		for range w2.Events() {
		}
		require.ErrorIs(t, w2.Err(), store.ErrUnavailable)
		w2.Stop()
	})
}

// A Break decision delivers exactly BreakAfter events; 0 ends the watch at
// once.
func TestBreakDeliversExactlyBreakAfterEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem := store.NewMemory[int]()
		for i := range 5 {
			_, err := mem.Create(ctx, fmt.Sprint("k", i), i)
			require.NoError(t, err)
		}
		s := newStore(t, mem, faultstore.Options{Plan: faultstore.Script(
			faultstore.Decision{Fault: faultstore.Break, BreakAfter: 3},
			faultstore.Decision{Fault: faultstore.Break},
		)})
		for _, want := range []int{3, 0} {
			w, err := s.Watch(ctx, "", 0)
			require.NoError(t, err)
			n := 0
			for range w.Events() {
				n++
			}
			require.Equal(t, want, n)
			require.ErrorIs(t, w.Err(), store.ErrUnavailable)
		}
	})
}

// A stopped watch ends with a nil error, like the stores it wraps.
func TestStoppedWatchEndsWithNil(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStore(t, store.NewMemory[int](), faultstore.Options{})
		w, err := s.Watch(context.Background(), "", 0)
		require.NoError(t, err)
		w.Stop()
		for range w.Events() {
		}
		require.NoError(t, w.Err())
	})
}

// A watch whose context ends ends with the context's error.
func TestWatchEndsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStore(t, store.NewMemory[int](), faultstore.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		w, err := s.Watch(ctx, "", 0)
		require.NoError(t, err)
		cancel()
		require.ErrorIs(t, storetest.WatchEnded(t, w), context.Canceled)
	})
}

// Compacted refuses a watch with store.ErrCompacted, as a resume from a
// revision no longer retained is, so the caller re-lists.
func TestCompactedRefusesTheWatchSoTheCallerRelists(t *testing.T) {
	s := newStore(t, store.NewMemory[int](), faultstore.Options{Plan: faultstore.Script(faultstore.Decision{Fault: faultstore.Compacted})})
	_, err := s.Watch(context.Background(), "", 0)
	require.ErrorIs(t, err, store.ErrCompacted)
	require.ErrorIs(t, err, faultstore.ErrNotSent)
	w, err := s.Watch(context.Background(), "", 0)
	require.NoError(t, err)
	w.Stop()
}

// noProgress is a store whose watchers do not implement
// store.ProgressRequester.
type noProgress struct{ store.Store[int] }

func (s noProgress) Watch(ctx context.Context, prefix string, after int64) (store.Watcher[int], error) {
	w, err := s.Store.Watch(ctx, prefix, after)
	if err != nil {
		return nil, err
	}
	return struct{ store.Watcher[int] }{w}, nil
}

// A watcher implements store.ProgressRequester exactly when the wrapped
// one does.
func TestWatcherReportsProgressExactlyWhenTheWrappedOneDoes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := store.NewMemory[int]()
		for inner, want := range map[store.Store[int]]bool{mem: true, noProgress{mem}: false} {
			w, err := newStore(t, inner, faultstore.Options{}).Watch(context.Background(), "", 0)
			require.NoError(t, err)
			_, ok := w.(store.ProgressRequester)
			require.Equal(t, want, ok, "%T", inner)
			w.Stop()
		}
	})
}
