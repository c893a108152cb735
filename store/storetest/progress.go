package storetest

import (
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// progressOf returns w as a ProgressRequester, failing the test if it is not
// one: every watch of a conforming backend answers progress requests.
func progressOf(t *testing.T, w store.Watcher[*Value]) store.ProgressRequester {
	t.Helper()
	pr, ok := w.(store.ProgressRequester)
	if !ok {
		t.Fatalf("the watcher %T does not implement store.ProgressRequester", w)
	}
	return pr
}

// requestProgress asks w for progress and returns the Progress event that
// must be its next event.
func requestProgress(t *testing.T, w store.Watcher[*Value]) store.Event[*Value] {
	t.Helper()
	require.NoError(t, progressOf(t, w).RequestProgress(t.Context()), "RequestProgress")
	ev := next(t, w)
	require.Equal(t, store.Progress, ev.Type, "the event after a progress request, at revision %d for %q", ev.Object.Revision, ev.Object.Key)
	require.Empty(t, ev.Object.Key, "a Progress event has no key")
	require.Nil(t, ev.Object.Value, "a Progress event has no value")
	return ev
}

// progressOrdered checks that a Progress event comes after every event up to
// its revision, and that its revision is at least the store's revision when
// it was requested: on a live watch, and on one still catching up on the
// history.
func (suite) progressOrdered(t *testing.T, s store.Store[*Value]) {
	start := mustRevision(t, s)
	live := mustWatch(t, s, "p/", start)
	want := writes(t, s, "p/", 12)
	cur := mustRevision(t, s)

	// The request is made with every event still unread: the answer must
	// wait behind them.
	require.NoError(t, progressOf(t, live).RequestProgress(t.Context()), "RequestProgress")
	receive(t, live, want)
	ev := next(t, live)
	require.Equal(t, store.Progress, ev.Type, "after the events, the answer to the request")
	require.GreaterOrEqual(t, ev.Object.Revision, cur, "Progress revision vs the store revision at the request")

	// A watch from the start has the whole history to send: the answer
	// comes after all of it.
	behind := mustWatch(t, s, "p/", start)
	require.NoError(t, progressOf(t, behind).RequestProgress(t.Context()))
	receive(t, behind, want)
	ev = next(t, behind)
	require.Equal(t, store.Progress, ev.Type, "after the history, the answer to the request")
	require.GreaterOrEqual(t, ev.Object.Revision, cur)

	// The watch goes on after a Progress event, and a second request is
	// answered too.
	more := writes(t, s, "p/x", 3)
	receive(t, live, more)
	ev = requestProgress(t, live)
	require.GreaterOrEqual(t, ev.Object.Revision, more[len(more)-1].Object.Revision)
	quiet(t, s, live, "p/")
}

// progressQuietPrefix checks that a watch whose prefix saw no change still
// answers, with a revision covering the writes made elsewhere.
func (suite) progressQuietPrefix(t *testing.T, s store.Store[*Value]) {
	w := mustWatch(t, s, "quiet/", mustRevision(t, s))
	for i := range 5 {
		mustCreate(t, s, "other/"+string(rune('a'+i)), val(i))
	}
	cur := mustRevision(t, s)
	ev := requestProgress(t, w)
	require.GreaterOrEqual(t, ev.Object.Revision, cur, "Progress revision on a quiet prefix")
	quiet(t, s, w, "quiet/")
}

// progressBackToBack checks that requests made one after the other with no
// write in between (each for the same revision, the next made as soon as
// the answer to the previous arrives) are each answered: a store that
// merges a request with the one it is answering loses it.
func (suite) progressBackToBack(t *testing.T, s store.Store[*Value]) {
	mustCreate(t, s, "b2b/a", val(1))
	cur := mustRevision(t, s)
	w := mustWatch(t, s, "b2b/", cur)
	for range 200 {
		ev := requestProgress(t, w)
		require.GreaterOrEqual(t, ev.Object.Revision, cur, "Progress revision with no write in between")
	}
	quiet(t, s, w, "b2b/")
}

// progressInvalid checks that a nil context is refused with ErrInvalid
// (not a panic) and that a request on a stopped watch neither panics nor
// blocks.
func (suite) progressInvalid(t *testing.T, s store.Store[*Value]) {
	w := mustWatch(t, s, "", mustRevision(t, s))
	pr := progressOf(t, w)
	err := noPanic(t, "RequestProgress(nil)", func() error {
		//lint:ignore SA1012 a nil context is the bad input under test
		return pr.RequestProgress(nil) //nolint:staticcheck
	})
	requireIs(t, err, store.ErrInvalid, "RequestProgress with a nil context")
	w.Stop()
	_ = noPanic(t, "RequestProgress after Stop", func() error { return pr.RequestProgress(t.Context()) })
}

// noPanic runs fn and turns a panic into a test failure, so that a backend
// that panics fails the clause instead of killing the whole test binary.
func noPanic(t *testing.T, what string, fn func() error) (err error) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("%s panicked: %v", what, p)
		}
	}()
	return fn()
}
