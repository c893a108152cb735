package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/store"
)

// countingMemory is the memory store with its lists counted: its watch
// and its Diff are the memory store's own.
type countingMemory struct {
	*store.Memory[*item]
	lists atomic.Int64
}

func (c *countingMemory) List(ctx context.Context, prefix string) ([]store.Object[*item], int64, error) {
	c.lists.Add(1)
	return c.Memory.List(ctx, prefix)
}

// statusWriter reconciles an item by recording Seen = Want through the
// request's store, and remembers whether each key was last reconciled as
// deleted.
type statusWriter struct {
	mu      sync.Mutex
	deleted map[string]bool
}

func (r *statusWriter) Reconcile(ctx context.Context, req Request[*item]) (Result, error) {
	r.mu.Lock()
	if r.deleted == nil {
		r.deleted = map[string]bool{}
	}
	r.deleted[req.Key] = req.Deleted
	r.mu.Unlock()
	if req.Deleted || req.Object.Value.Seen == req.Object.Value.Want {
		return Result{}, nil
	}
	v := *req.Object.Value
	v.Seen = v.Want
	_, err := req.Store.Update(ctx, req.Key, &v, req.Object.Revision)
	return Result{}, err
}

// TestAControllerWhoseWatchFallsBehindABurstCatchesUpWithoutReListing: over
// the memory store with a history far smaller than a burst of creates,
// then of deletes, written faster than the controller takes them in, the
// controller's watch falls behind and catches up by difference: every
// object converges, every deleted key is reconciled as deleted, and the
// store is listed once, at the start.
func TestAControllerWhoseWatchFallsBehindABurstCatchesUpWithoutReListing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &countingMemory{Memory: store.NewMemory[*item](store.WithHistory(16), store.WithWatchLag(4))}
		defer s.Close()
		convergesThroughABurstListingOnce(t, s, &s.lists)
	})
}

// convergesThroughABurstListingOnce runs a controller over s while 400
// objects are created and then every other one deleted, each write at
// once after the last (the controller catching up in between), and checks that every object converged, every
// deleted key was reconciled as deleted and lists counted one list.
func convergesThroughABurstListingOnce(t *testing.T, s store.Store[*item], lists *atomic.Int64) {
	t.Helper()
	rec := &statusWriter{}
	c := newTxnController(t, s, rec, Options[*item]{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	require.NoError(t, c.WaitForSync(ctx))
	const n = 400
	created := make([]store.Object[*item], n)
	for i := range n {
		obj, err := s.Create(ctx, fmt.Sprintf("items/%03d", i), &item{Want: i + 1})
		require.NoError(t, err)
		created[i] = obj
	}
	waitFor(ctx, t, c, s)
	for i := 0; i < n; i += 2 {
		deleteNow(ctx, t, s, created[i].Key)
	}
	waitFor(ctx, t, c, s)
	live, _, err := s.List(ctx, "")
	require.NoError(t, err)
	require.Len(t, live, n/2)
	for _, obj := range live {
		require.Equal(t, obj.Value.Want, obj.Value.Seen, "%s converged", obj.Key)
	}
	rec.mu.Lock()
	for i, obj := range created {
		require.Equal(t, i%2 == 0, rec.deleted[obj.Key], "%s: reconciled as deleted exactly when deleted", obj.Key)
	}
	rec.mu.Unlock()
	require.EqualValues(t, 2, lists.Load(), "the controller listed the store once (the second list is the test's)")
	cancel()
	require.NoError(t, <-done)
}

// waitFor waits until c has reconciled every change of s so far and
// everything in the bubble is idle.
func waitFor(ctx context.Context, t *testing.T, c *Controller[*item], s store.Store[*item]) {
	t.Helper()
	rev, err := s.Revision(ctx)
	require.NoError(t, err)
	require.NoError(t, c.WaitForRevision(ctx, rev))
	synctest.Wait()
}

// deleteNow deletes key at whatever revision it has, retrying while a
// status write races it.
func deleteNow(ctx context.Context, t *testing.T, s store.Store[*item], key string) {
	t.Helper()
	for {
		obj, err := s.Get(ctx, key)
		require.NoError(t, err)
		_, err = s.Delete(ctx, key, obj.Revision)
		if !errors.Is(err, store.ErrConflict) {
			require.NoError(t, err)
			return
		}
	}
}

// noProgressBytes is a byte store whose watches cannot answer progress
// requests.
type noProgressBytes struct{ store.Store[[]byte] }

func (s noProgressBytes) Watch(ctx context.Context, prefix string, after int64) (store.Watcher[[]byte], error) {
	w, err := s.Store.Watch(ctx, prefix, after)
	if err != nil {
		return nil, err
	}
	return struct{ store.Watcher[[]byte] }{w}, nil
}

// TestAControllerFollowsADifferWhoseWatchCannotReportProgress: a store
// that implements store.Differ (a View) over a byte store whose watches
// cannot answer progress requests is followed as it was before the cache
// caught up by difference: writes are reconciled, from one list.
func TestAControllerFollowsADifferWhoseWatchCannotReportProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		raw := store.NewMemory[[]byte]()
		defer raw.Close()
		s := &countingView{View: store.NewView[*item](noProgressBytes{raw}, nil)}
		rec := &statusWriter{}
		c := newTxnController(t, s, rec, Options[*item]{})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		require.NoError(t, c.WaitForSync(ctx))
		for i := range 20 {
			_, err := s.Create(ctx, fmt.Sprintf("items/%02d", i), &item{Want: i + 1})
			require.NoError(t, err)
		}
		waitFor(ctx, t, c, s)
		live, _, err := s.List(ctx, "")
		require.NoError(t, err)
		for _, obj := range live {
			require.Equal(t, obj.Value.Want, obj.Value.Seen, "%s converged", obj.Key)
		}
		require.EqualValues(t, 2, s.lists.Load(), "the controller listed the store once (the second list is the test's)")
		cancel()
		require.NoError(t, <-done)
	})
}

// countingView is a View with its lists counted: its watch and its Diff
// are the View's own.
type countingView struct {
	*store.View[*item]
	lists atomic.Int64
}

func (c *countingView) List(ctx context.Context, prefix string) ([]store.Object[*item], int64, error) {
	c.lists.Add(1)
	return c.View.List(ctx, prefix)
}
