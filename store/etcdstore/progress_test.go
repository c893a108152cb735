package etcdstore_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/etcdstore"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// requestProgress asks w for progress, failing if it cannot.
func requestProgress(t testing.TB, w store.Watcher[*item]) {
	t.Helper()
	r, ok := w.(store.ProgressRequester)
	require.True(t, ok, "an etcd watcher is a store.ProgressRequester")
	require.NoError(t, r.RequestProgress(t.Context()))
}

// untilProgress returns the events w delivers up to its next Progress
// event, and that event; it fails if the watch ends or nothing arrives
// within patience.
func untilProgress(t testing.TB, w store.Watcher[*item]) ([]store.Event[*item], store.Event[*item]) {
	t.Helper()
	var evs []store.Event[*item]
	for {
		ev := nextEvent(t, w)
		if ev.Type == store.Progress {
			return evs, ev
		}
		evs = append(evs, ev)
	}
}

// TestProgressComesAfterTheEventsItCovers: a Progress event answers a
// request with a revision at least the cluster's revision at the time of
// the request, and comes after every event up to it, including each key of
// a multi-key transaction written by another program and a write outside
// the watch's prefix; a watch never sends one unasked.
func TestProgressComesAfterTheEventsItCovers(t *testing.T) {
	client := newClient(t, nil, startServer(t, nil).Endpoint())
	ctx := t.Context()
	s := newStore(t, client, "app/")
	start, err := s.Revision(ctx)
	require.NoError(t, err)
	w, err := s.Watch(ctx, "", start)
	require.NoError(t, err)
	defer w.Stop()

	a, err := s.Create(ctx, "a", &item{N: 1})
	require.NoError(t, err)
	txn, err := client.Txn(ctx).Then(
		clientv3.OpPut("app/b", `{"n":2}`), clientv3.OpPut("app/c", `{"n":3}`), clientv3.OpPut("app/d", `{"n":4}`),
	).Commit()
	require.NoError(t, err)
	_, err = client.Put(ctx, "elsewhere", "x")
	require.NoError(t, err)
	rev, err := s.Revision(ctx)
	require.NoError(t, err)

	requestProgress(t, w)
	evs, p := untilProgress(t, w)
	require.GreaterOrEqual(t, p.Object.Revision, rev, "the answer covers the revision at the time of the request")
	require.Equal(t, store.Object[*item]{Revision: p.Object.Revision}, p.Object, "a Progress event carries only a revision")
	require.Len(t, evs, 4, "every event up to the answer comes before it")
	require.Equal(t, a, evs[0].Object)
	for i, key := range []string{"b", "c", "d"} {
		require.Equal(t, key, evs[1+i].Object.Key)
		require.Equal(t, txn.Header.Revision, evs[1+i].Object.Revision, "the transaction's keys share its revision")
	}

	// Unasked, a watch sends only changes.
	e, err := s.Create(ctx, "e", &item{N: 5})
	require.NoError(t, err)
	require.Equal(t, e, nextEvent(t, w).Object)

	// Requests made together may be answered together; each gets an
	// answer that covers it.
	requestProgress(t, w)
	requestProgress(t, w)
	_, p = untilProgress(t, w)
	require.GreaterOrEqual(t, p.Object.Revision, e.Revision)
}

// TestWatchFromTheFutureAnswersProgressAndDeliversOnceReached: a watch that
// starts after a revision the cluster has not reached answers a progress
// request (with its start revision, which nothing it watches can be at or
// below), then delivers changes once the cluster gets there; one after
// math.MaxInt64 delivers nothing.
func TestWatchFromTheFutureAnswersProgressAndDeliversOnceReached(t *testing.T) {
	client := newClient(t, nil, startServer(t, nil).Endpoint())
	ctx := t.Context()
	s := newStore(t, client, "app/")
	rev, err := s.Revision(ctx)
	require.NoError(t, err)
	after := rev + 3
	w, err := s.Watch(ctx, "", after)
	require.NoError(t, err)
	defer w.Stop()
	never, err := s.Watch(ctx, "", math.MaxInt64)
	require.NoError(t, err)
	defer never.Stop()
	requestProgress(t, w)
	evs, p := untilProgress(t, w)
	require.Empty(t, evs)
	require.Equal(t, after, p.Object.Revision)

	var last store.Object[*item]
	for i := range 4 {
		last, err = s.Create(ctx, string(rune('a'+i)), &item{N: i})
		require.NoError(t, err)
	}
	require.Equal(t, after+1, last.Revision)
	require.Equal(t, last, nextEvent(t, w).Object, "only the change after the start revision")
	requestProgress(t, w)
	_, p = untilProgress(t, w)
	require.GreaterOrEqual(t, p.Object.Revision, last.Revision)

	requestProgress(t, never)
	evs, p = untilProgress(t, never)
	require.Empty(t, evs, "a watch after the largest revision delivers nothing")
	require.Equal(t, int64(math.MaxInt64), p.Object.Revision)
}

// TestProgressRequestOnAnEndedWatchIsUnavailable: once a watch has ended, a
// progress request fails with store.ErrUnavailable instead of waiting for an
// answer that cannot come; a nil context is invalid.
func TestProgressRequestOnAnEndedWatchIsUnavailable(t *testing.T) {
	client := newClient(t, nil, startServer(t, nil).Endpoint())
	s := newStore(t, client, "app/")
	w, err := s.Watch(t.Context(), "", 0)
	require.NoError(t, err)
	r := w.(store.ProgressRequester)
	//lint:ignore SA1012 a nil context on purpose
	require.ErrorIs(t, r.RequestProgress(nil), store.ErrInvalid)
	w.Stop()
	require.ErrorIs(t, r.RequestProgress(t.Context()), store.ErrUnavailable)
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	require.ErrorIs(t, r.RequestProgress(cancelled), context.Canceled)
}

// TestWatchReturnsOnlyOnceEstablished: Watch returns a watch that exists on
// the server, so a write made right after Watch returns is delivered even
// from a watch that starts at the current revision; when no member can
// create it, Watch fails with store.ErrUnavailable within the open timeout
// instead of returning a watch that does not exist.
func TestWatchReturnsOnlyOnceEstablished(t *testing.T) {
	e := startServer(t, nil)
	client := newClient(t, nil, e.Endpoint())
	ctx := t.Context()
	s := newStore(t, client, "app/", etcdstore.WithWatchOpenTimeout(300*time.Millisecond))
	w, err := s.Watch(ctx, "", 0)
	require.NoError(t, err)
	defer w.Stop()
	requestProgress(t, w)
	_, p := untilProgress(t, w)
	require.Positive(t, p.Object.Revision, "an established watch answers")

	e.Stop()
	_, err = s.Watch(ctx, "", p.Object.Revision)
	require.ErrorIs(t, err, store.ErrUnavailable, "a watch that no member created")
}
