package httpstore_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
	"github.com/stretchr/testify/require"
)

// nextEvent returns the watch's next event, failing the test if the watch
// ends or nothing arrives within a generous patience.
func nextEvent(t *testing.T, w store.Watcher[*item]) store.Event[*item] {
	t.Helper()
	select {
	case ev, ok := <-w.Events():
		require.True(t, ok, "the watch ended: %v", w.Err())
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
	}
	return store.Event[*item]{}
}

// TestProgressRequestOnAStreamServedElsewhereIsAnsweredByAHeartbeat: with
// two servers over one store behind a router that sends the watch to one
// and the progress requests to the other (a load balancer spreading
// requests), the request is still answered, by the watching server's next
// heartbeat at or above the store's revision at the request, after every
// change up to it.
func TestProgressRequestOnAStreamServedElsewhereIsAnsweredByAHeartbeat(t *testing.T) {
	m := store.NewMemory[*item]()
	t.Cleanup(func() { _ = m.Close() })
	watching, err := httpstore.NewHandler[*item](m, httpstore.WithHeartbeat(20*time.Millisecond))
	require.NoError(t, err)
	other, err := httpstore.NewHandler[*item](m)
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/progress" {
			other.ServeHTTP(w, r)
			return
		}
		watching.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c := client[*item](t, srv.URL)
	w, err := c.Watch(t.Context(), "p/", 0)
	require.NoError(t, err)
	defer w.Stop()
	a, err := m.Create(t.Context(), "p/a", &item{N: 1})
	require.NoError(t, err)
	_, err = m.Create(t.Context(), "elsewhere", &item{N: 2})
	require.NoError(t, err)
	cur, err := m.Revision(t.Context())
	require.NoError(t, err)

	require.NoError(t, w.(store.ProgressRequester).RequestProgress(t.Context()))
	require.Equal(t, a, nextEvent(t, w).Object, "the change before the request comes first")
	ev := nextEvent(t, w)
	require.Equal(t, store.Progress, ev.Type)
	require.GreaterOrEqual(t, ev.Object.Revision, cur)
}

// TestReadOnlyTokenWatchesAndRequestsProgress: progress requests are
// reads.
func TestReadOnlyTokenWatchesAndRequestsProgress(t *testing.T) {
	m, url := guarded(t)
	c := client[*item](t, url, httpstore.WithToken(roToken))
	w, err := c.Watch(t.Context(), "", 0)
	require.NoError(t, err)
	defer w.Stop()
	require.Equal(t, store.Created, nextEvent(t, w).Type, "the seed")
	require.NoError(t, w.(store.ProgressRequester).RequestProgress(t.Context()))
	ev := nextEvent(t, w)
	require.Equal(t, store.Progress, ev.Type)
	require.GreaterOrEqual(t, ev.Object.Revision, int64(1))
	unchanged(t, m)
}
