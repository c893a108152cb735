package storetest

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// writes makes a mix of creates, updates and deletes on keys under prefix
// and returns the events a watch should report for them, in order.
func writes(t *testing.T, s store.Store[*Value], prefix string, n int) []store.Event[*Value] {
	t.Helper()
	ctx := t.Context()
	var evs []store.Event[*Value]
	live := map[string]store.Object[*Value]{}
	for i := range n {
		key := fmt.Sprintf("%s%d", prefix, i%3)
		cur, ok := live[key]
		switch {
		case !ok:
			obj := mustCreate(t, s, key, val(i))
			live[key] = obj
			evs = append(evs, store.Event[*Value]{Type: store.Created, Object: obj})
		case i%4 == 0:
			rev, err := s.Delete(ctx, key, cur.Revision)
			require.NoError(t, err)
			delete(live, key)
			cur.Revision = rev
			evs = append(evs, store.Event[*Value]{Type: store.Deleted, Object: cur})
		default:
			obj := mustUpdate(t, s, key, val(i), cur.Revision)
			live[key] = obj
			evs = append(evs, store.Event[*Value]{Type: store.Updated, Object: obj})
		}
	}
	return evs
}

// receive reads len(want) events and checks them against want.
func receive(t *testing.T, w store.Watcher[*Value], want []store.Event[*Value]) {
	t.Helper()
	for i, ev := range want {
		got := next(t, w)
		require.Equal(t, ev, got, "event %d of %d", i+1, len(want))
	}
}

// quiet checks that no further event is delivered: it makes a write outside
// the watched prefix (if there is one) and one inside, and expects the next
// event to be that last write. This proves there were no extra events without
// waiting on a clock.
func quiet(t *testing.T, s store.Store[*Value], w store.Watcher[*Value], prefix string) {
	t.Helper()
	if prefix != "" {
		mustCreate(t, s, "~outside", val(-1))
	}
	marker := mustCreate(t, s, prefix+"~marker", val(-2))
	got := next(t, w)
	require.Equal(t, store.Event[*Value]{Type: store.Created, Object: marker}, got, "expected no event before the marker")
}

func (suite) watchOrdered(t *testing.T, s store.Store[*Value]) {
	w := mustWatch(t, s, "k/", mustRevision(t, s))
	want := writes(t, s, "k/", 30)
	receive(t, w, want)
	for i := 1; i < len(want); i++ {
		require.Greater(t, want[i].Object.Revision, want[i-1].Object.Revision)
	}
	quiet(t, s, w, "k/")
}

func (suite) watchPrefix(t *testing.T, s store.Store[*Value]) {
	start := mustRevision(t, s)
	wa := mustWatch(t, s, "a/", start)
	wall := mustWatch(t, s, "", start)
	var all, onlyA []store.Event[*Value]
	for i := range 10 {
		for _, p := range []string{"a/", "b/", "ab/"} {
			obj := mustCreate(t, s, fmt.Sprintf("%s%d", p, i), val(i))
			ev := store.Event[*Value]{Type: store.Created, Object: obj}
			all = append(all, ev)
			if p == "a/" {
				onlyA = append(onlyA, ev)
			}
		}
	}
	receive(t, wa, onlyA)
	receive(t, wall, all)
	quiet(t, s, wa, "a/")
}

// watchResume starts a watch after every revision of a run of writes and
// checks that each delivers exactly the writes after it.
func (suite) watchResume(t *testing.T, s store.Store[*Value]) {
	start := mustRevision(t, s)
	want := writes(t, s, "r/", 20)
	afters := []int64{start}
	for _, ev := range want {
		afters = append(afters, ev.Object.Revision)
	}
	for i, after := range afters {
		w := mustWatch(t, s, "r/", after)
		receive(t, w, want[i:])
		w.Stop()
	}
	// A watch after the newest revision waits for the next write.
	w := mustWatch(t, s, "r/", afters[len(afters)-1])
	quiet(t, s, w, "r/")
}

func (suite) watchFuture(t *testing.T, s store.Store[*Value]) {
	first := mustCreate(t, s, "f/0", val(0))
	// Watch after the revision the second write will take.
	w := mustWatch(t, s, "f/", first.Revision+1)
	mustCreate(t, s, "f/1", val(1))
	third := mustCreate(t, s, "f/2", val(2))
	got := next(t, w)
	require.Equal(t, store.Event[*Value]{Type: store.Created, Object: third}, got)
}

// watchFarFuture checks that a watch after a revision far in the future,
// math.MaxInt64 included, waits for it: it starts, does not end, delivers
// none of the writes up to that revision, and answers progress requests.
func (suite) watchFarFuture(t *testing.T, s store.Store[*Value]) {
	start := mustRevision(t, s)
	var ws []store.Watcher[*Value]
	for _, after := range []int64{start + 1000, math.MaxInt64 - 1, math.MaxInt64} {
		ws = append(ws, mustWatch(t, s, "ff/", after))
	}
	written := mustCreate(t, s, "ff/a", val(1))
	mustUpdate(t, s, "ff/a", val(2), written.Revision)
	cur := mustRevision(t, s)
	for _, w := range ws {
		// The first event must be the answer to the request: the watch
		// neither ended nor delivered a write it was not asked for.
		ev := requestProgress(t, w)
		require.GreaterOrEqual(t, ev.Object.Revision, cur, "Progress of a watch from the future")
	}
}

func (suite) watchCompacted(t *testing.T, s store.Store[*Value]) {
	c, ok := s.(Compactor)
	if !ok {
		t.Skip("backend does not implement storetest.Compactor")
	}
	ctx := t.Context()
	start := mustRevision(t, s)
	want := writes(t, s, "c/", 10)
	mid := want[4].Object.Revision

	// A watch running from before the compaction point that has not read
	// its events may end with ErrCompacted, or deliver them all; what it
	// must not do is skip any.
	early := mustWatch(t, s, "c/", start)
	require.NoError(t, c.Compact(ctx, mid))

	w, err := s.Watch(ctx, "c/", mid-1)
	if err == nil {
		err = ended(t, w)
	}
	requireIs(t, err, store.ErrCompacted, "Watch from a compacted revision")

	// Any retained revision still works.
	receive(t, mustWatch(t, s, "c/", mid), want[5:])

	for i := 0; ; i++ {
		ev, ok := <-early.Events()
		if !ok {
			requireIs(t, early.Err(), store.ErrCompacted, "watch overtaken by compaction")
			break
		}
		require.Equal(t, want[i], ev, "event %d of the early watch", i)
		if i == len(want)-1 {
			break
		}
	}
}

func (suite) watchStop(t *testing.T, s store.Store[*Value]) {
	w := mustWatch(t, s, "", mustRevision(t, s))
	mustCreate(t, s, "a", val(1))
	w.Stop()
	for range w.Events() {
		// Events already sent may still be read; the channel must close.
	}
	require.NoError(t, w.Err(), "Err after Stop")
	w.Stop()
	mustCreate(t, s, "b", val(2))
}

func (suite) watchCancel(t *testing.T, s store.Store[*Value]) {
	ctx, cancel := context.WithCancel(t.Context())
	w, err := s.Watch(ctx, "", mustRevision(t, s))
	require.NoError(t, err)
	defer w.Stop()
	obj := mustCreate(t, s, "a", val(1))
	require.Equal(t, obj, next(t, w).Object)
	cancel()
	for range w.Events() {
		// The channel must close.
	}
	requireIs(t, w.Err(), context.Canceled, "Err after cancelling the watch's context")
}

// concurrentWatchers runs several watchers, from several starting points,
// reading concurrently with the writer; each must see its whole stream.
func (suite) concurrentWatchers(t *testing.T, s store.Store[*Value]) {
	const watchers, n = 10, 100
	start := mustRevision(t, s)
	ws := make([]store.Watcher[*Value], watchers)
	for i := range ws {
		ws[i] = mustWatch(t, s, "", start)
	}
	var got [watchers][]store.Event[*Value]
	var errs [watchers]error
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Go(func() {
			for len(got[i]) < n {
				ev, ok := <-w.Events()
				if !ok {
					errs[i] = fmt.Errorf("watch ended after %d events: %w", len(got[i]), w.Err())
					return
				}
				got[i] = append(got[i], ev)
			}
		})
	}
	var want []store.Event[*Value]
	for i := range n {
		obj := mustCreate(t, s, fmt.Sprintf("w/%03d", i), val(i))
		want = append(want, store.Event[*Value]{Type: store.Created, Object: obj})
	}
	wg.Wait()
	for i := range ws {
		require.NoError(t, errs[i], "watcher %d", i)
		require.Equal(t, want, got[i], "watcher %d", i)
	}
}

// slowWatcher makes many writes while a watcher reads nothing. Writers must
// not be held back. Afterwards the watcher either delivers everything (the
// backend buffered it) or ends with ErrLagging after a gap-free prefix, and a
// new watch from its last event delivers the rest.
func (s suite) slowWatcher(t *testing.T, st store.Store[*Value]) {
	if s.opts.SkipSlowWatcher {
		t.Skip("skipped by Options.SkipSlowWatcher")
	}
	ctx := t.Context()
	start := mustRevision(t, st)
	w := mustWatch(t, st, "", start)
	n := s.opts.SlowWatcherWrites
	want := make([]store.Event[*Value], 0, n)
	wrote := make(chan error, 1)
	go func() {
		obj, err := st.Create(ctx, "slow", val(0))
		want = append(want, store.Event[*Value]{Type: store.Created, Object: obj})
		for i := 1; i < n && err == nil; i++ {
			obj, err = st.Update(ctx, "slow", val(i), obj.Revision)
			want = append(want, store.Event[*Value]{Type: store.Updated, Object: obj})
		}
		wrote <- err
	}()
	timer := time.NewTimer(patience)
	defer timer.Stop()
	select {
	case err := <-wrote:
		require.NoError(t, err)
	case <-timer.C:
		t.Fatalf("%d writes did not finish within %v: a watcher that does not read holds writers back", n, patience)
	}

	got := make([]store.Event[*Value], 0, n)
	for len(got) < n {
		ev, ok := <-w.Events()
		if !ok {
			break
		}
		got = append(got, ev)
	}
	require.Equal(t, want[:len(got)], got, "a slow watcher's events are a gap-free prefix")
	if len(got) == n {
		return // the backend kept up
	}
	requireIs(t, w.Err(), store.ErrLagging, "a slow watcher ends with ErrLagging")
	after := start
	if len(got) > 0 {
		after = got[len(got)-1].Object.Revision
	}
	t.Logf("the slow watcher lagged after %d of %d events; resuming", len(got), n)
	receive(t, mustWatch(t, st, "", after), want[len(got):])
}
