package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

type item struct {
	N    int
	Tags map[string]string
}

func createN(t *testing.T, s store.Store[*item], prefix string, n int) []store.Object[*item] {
	t.Helper()
	objs := make([]store.Object[*item], n)
	for i := range objs {
		obj, err := s.Create(t.Context(), fmt.Sprintf("%s%04d", prefix, i), &item{N: i})
		require.NoError(t, err)
		objs[i] = obj
	}
	return objs
}

// drain reads events until the watch ends and returns them with Err.
func drain(w store.Watcher[*item]) ([]store.Event[*item], error) {
	var evs []store.Event[*item]
	for ev := range w.Events() {
		evs = append(evs, ev)
	}
	return evs, w.Err()
}

func revisions(evs []store.Event[*item]) []int64 {
	revs := make([]int64, len(evs))
	for i, ev := range evs {
		revs[i] = ev.Object.Revision
	}
	return revs
}

func span(from, to int64) []int64 {
	var revs []int64
	for r := from; r <= to; r++ {
		revs = append(revs, r)
	}
	return revs
}

func TestMemoryCloseEndsWatchersAndCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		m := store.NewMemory[*item]()
		obj, err := m.Create(ctx, "a", &item{})
		require.NoError(t, err)
		w1, err := m.Watch(ctx, "", 0)
		require.NoError(t, err)
		w2, err := m.Watch(ctx, "x/", obj.Revision)
		require.NoError(t, err)

		require.NoError(t, m.Close())
		require.NoError(t, m.Close(), "Close is idempotent")

		// Close has waited for the watchers: their channels are closed.
		for _, w := range []store.Watcher[*item]{w1, w2} {
			_, err := drain(w)
			require.ErrorIs(t, err, store.ErrUnavailable)
			w.Stop()
			require.ErrorIs(t, w.Err(), store.ErrUnavailable, "Stop after the end keeps the reason")
		}

		_, err = m.Get(ctx, "a")
		require.ErrorIs(t, err, store.ErrUnavailable)
		_, _, err = m.List(ctx, "")
		require.ErrorIs(t, err, store.ErrUnavailable)
		_, err = m.Create(ctx, "b", &item{})
		require.ErrorIs(t, err, store.ErrUnavailable)
		_, err = m.Update(ctx, "a", &item{}, obj.Revision)
		require.ErrorIs(t, err, store.ErrUnavailable)
		_, err = m.Delete(ctx, "a", obj.Revision)
		require.ErrorIs(t, err, store.ErrUnavailable)
		_, err = m.Watch(ctx, "", 0)
		require.ErrorIs(t, err, store.ErrUnavailable)
		_, err = m.Revision(ctx)
		require.ErrorIs(t, err, store.ErrUnavailable)
		require.ErrorIs(t, m.Compact(ctx, 0), store.ErrUnavailable)
	})
}

// WithHistory(n) keeps exactly the last n revisions to watch from: a watch
// after an older revision is ErrCompacted, one within history delivers every
// later change, and history moving on does not end a watcher past it.
func TestMemoryKeepsExactlyItsHistoryLimitToWatchFrom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		m := store.NewMemory[*item](store.WithHistory(5))
		defer m.Close()
		createN(t, m, "k", 12)

		_, err := m.Watch(ctx, "", 6)
		require.ErrorIs(t, err, store.ErrCompacted, "revision 7 is gone")
		w, err := m.Watch(ctx, "", 7)
		require.NoError(t, err)
		got := make([]store.Event[*item], 0, 5)
		for range 5 {
			got = append(got, <-w.Events())
		}
		require.Equal(t, span(8, 12), revisions(got))

		// Revision 13 pushes 8 out of history; the watcher no longer needs it.
		_, err = m.Create(ctx, "last", &item{})
		require.NoError(t, err)
		require.Equal(t, int64(13), (<-w.Events()).Object.Revision)
		w.Stop()
		require.NoError(t, w.Err())
	})
}

// A watcher whose next revision is about to leave history is ended with
// ErrLagging, after a gap-free prefix, even within its lag allowance.
func TestMemoryWatcherOverrunByHistoryEndsWithErrLaggingAfterAGapFreePrefix(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		m := store.NewMemory[*item](store.WithHistory(200), store.WithWatchLag(5000))
		defer m.Close()
		createN(t, m, "a", 400)
		w, err := m.Watch(ctx, "", 200)
		require.NoError(t, err)
		synctest.Wait() // w has taken what fits in its buffers and blocks
		createN(t, m, "b", 200)
		evs, err := drain(w)
		require.ErrorIs(t, err, store.ErrLagging)
		require.NotEmpty(t, evs)
		require.Equal(t, span(201, 200+int64(len(evs))), revisions(evs))
	})
}

// Compact refuses revisions out of range; it ends with ErrCompacted, after a
// gap-free prefix, only the watchers that still needed the compacted
// history; later watches start at the compaction point.
func TestMemoryCompactEndsOnlyWatchersThatNeedCompactedHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		m := store.NewMemory[*item]()
		defer m.Close()
		createN(t, m, "k", 300)

		require.ErrorIs(t, m.Compact(ctx, 301), store.ErrInvalid, "beyond the current revision")
		require.ErrorIs(t, m.Compact(ctx, -1), store.ErrInvalid)

		// behind reads nothing, so it blocks after taking its first events
		// from history; ahead has taken everything.
		behind, err := m.Watch(ctx, "", 0)
		require.NoError(t, err)
		ahead, err := m.Watch(ctx, "", 290)
		require.NoError(t, err)
		synctest.Wait()

		require.NoError(t, m.Compact(ctx, 250))
		require.NoError(t, m.Compact(ctx, 100), "compacting below the oldest revision does nothing")

		evs, err := drain(behind)
		require.ErrorIs(t, err, store.ErrCompacted, "a watcher that still needed compacted history")
		require.Equal(t, span(1, int64(len(evs))), revisions(evs), "it delivers a gap-free prefix first")
		require.Less(t, len(evs), 250)

		for want := int64(291); want <= 300; want++ {
			require.Equal(t, want, (<-ahead.Events()).Object.Revision)
		}
		ahead.Stop()
		require.NoError(t, ahead.Err(), "a watcher past the compaction point runs on")

		_, err = m.Watch(ctx, "", 249)
		require.ErrorIs(t, err, store.ErrCompacted)
		w, err := m.Watch(ctx, "", 250)
		require.NoError(t, err)
		defer w.Stop()
		require.Equal(t, int64(251), (<-w.Events()).Object.Revision)
	})
}

func TestMemoryLaggingWatcherNeverBlocksWriters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		m := store.NewMemory[*item](store.WithWatchLag(100), store.WithHistory(1000))
		defer m.Close()
		slow, err := m.Watch(ctx, "", 0)
		require.NoError(t, err)
		fast, err := m.Watch(ctx, "", 0)
		require.NoError(t, err)
		var fastGot []store.Event[*item]
		fastDone := make(chan struct{})
		go func() {
			defer close(fastDone)
			for len(fastGot) < 500 {
				fastGot = append(fastGot, <-fast.Events())
			}
		}()

		// Writes complete although slow reads nothing. After each one every
		// other goroutine settles, so fast keeps up.
		for i := range 500 {
			_, err := m.Create(ctx, fmt.Sprint("k", i), &item{N: i})
			require.NoError(t, err)
			synctest.Wait()
		}
		<-fastDone
		require.Equal(t, span(1, 500), revisions(fastGot), "a reader that keeps up is not affected")
		fast.Stop()
		require.NoError(t, fast.Err())

		got, err := drain(slow)
		require.ErrorIs(t, err, store.ErrLagging)
		require.Equal(t, span(1, int64(len(got))), revisions(got))

		// Resume from the last event received: nothing lost or repeated.
		resumed, err := m.Watch(ctx, "", int64(len(got)))
		require.NoError(t, err)
		defer resumed.Stop()
		for want := int64(len(got)) + 1; want <= 500; want++ {
			require.Equal(t, want, (<-resumed.Events()).Object.Revision)
		}
	})
}

// A watch that starts far behind (but within history) is allowed its
// backlog: it is not ended by the next write.
func TestMemoryWatchBacklogIsNotLag(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		m := store.NewMemory[*item](store.WithWatchLag(10), store.WithHistory(1000))
		defer m.Close()
		createN(t, m, "a", 400)
		w, err := m.Watch(ctx, "", 0)
		require.NoError(t, err)
		defer w.Stop()
		createN(t, m, "b", 5)
		for want := int64(1); want <= 405; want++ {
			ev, ok := <-w.Events()
			require.True(t, ok, "watch ended at revision %d: %v", want, w.Err())
			require.Equal(t, want, ev.Object.Revision)
		}
	})
}

// A watch ends when its context does, with the context's error.
func TestMemoryWatchEndsWithItsContextsError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		m := store.NewMemory[*item]()
		defer m.Close()
		w, err := m.Watch(ctx, "", 0)
		require.NoError(t, err)
		<-time.After(time.Minute) // fake time: the deadline passes
		_, err = drain(w)
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
}

// With the mutation check on, a change to a value the store handed out
// (even one only history still holds) makes the next operation fail with
// ErrMutated naming the key, once per mutation, and with no false alarm.
func TestMemoryMutationCheckFailsTheNextOperationOncePerMutation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		m := store.NewMemory[*item](store.WithMutationCheck(nil))
		defer m.Close()
		obj, err := m.Create(ctx, "a", &item{N: 1, Tags: map[string]string{"x": "1"}})
		require.NoError(t, err)
		_, err = m.Get(ctx, "a")
		require.NoError(t, err, "no false alarm")

		obj.Value.Tags["x"] = "2" // forbidden: obj.Value is shared
		_, err = m.Get(ctx, "a")
		require.ErrorIs(t, err, store.ErrMutated)
		require.ErrorContains(t, err, `"a"`)
		_, err = m.Get(ctx, "a")
		require.NoError(t, err, "each mutation is reported once")

		// A value that only history still holds (a deleted key's) is checked too.
		cur, err := m.Get(ctx, "a")
		require.NoError(t, err)
		_, err = m.Delete(ctx, "a", cur.Revision)
		require.NoError(t, err)
		cur.Value.N = 99
		_, err = m.Revision(ctx)
		require.ErrorIs(t, err, store.ErrMutated)
	})
}

// With a report func, a detected mutation is reported as ErrMutated and the
// operation goes ahead.
func TestMemoryMutationCheckWithReportFuncReportsAndProceeds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		var reported []error
		m := store.NewMemory[*item](store.WithMutationCheck(func(err error) { reported = append(reported, err) }))
		defer m.Close()
		obj, err := m.Create(ctx, "a", &item{N: 1})
		require.NoError(t, err)
		obj.Value.N = 2
		got, err := m.Update(ctx, "a", &item{N: 3}, obj.Revision)
		require.NoError(t, err, "with a report func the operation proceeds")
		require.Equal(t, 3, got.Value.N)
		require.Len(t, reported, 1)
		require.ErrorIs(t, reported[0], store.ErrMutated)
		require.True(t, errors.Is(reported[0], store.ErrMutated))
	})
}

// TestMemoryOptionOutOfRangeMakesEveryOperationInvalid: a negative history or
// watch lag is refused with ErrInvalid by every operation (NewMemory cannot
// fail); zero selects the default.
func TestMemoryOptionOutOfRangeMakesEveryOperationInvalid(t *testing.T) {
	ctx := t.Context()
	for _, opt := range []store.MemoryOption{store.WithHistory(-1), store.WithWatchLag(-1)} {
		m := store.NewMemory[int](opt)
		_, err := m.Create(ctx, "k", 1)
		require.ErrorIs(t, err, store.ErrInvalid)
		_, _, err = m.List(ctx, "")
		require.ErrorIs(t, err, store.ErrInvalid)
		_, err = m.Watch(ctx, "", 0)
		require.ErrorIs(t, err, store.ErrInvalid)
	}
	m := store.NewMemory[int](store.WithHistory(0), store.WithWatchLag(0))
	_, err := m.Create(ctx, "k", 1)
	require.NoError(t, err)
}
