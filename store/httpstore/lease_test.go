package httpstore_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/converge-go/converge/lock"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
	"github.com/stretchr/testify/require"
)

// TestLeaseWorksUnchangedOverTheClient: two processes contend for a lease
// through clients of one server; the second takes it when the first
// releases it (through the watch), and the first's fenced write fails.
func TestLeaseWorksUnchangedOverTheClient(t *testing.T) {
	m := store.NewMemory[lock.Record]()
	t.Cleanup(func() { _ = m.Close() })
	url := serve[lock.Record](t, m).URL
	first, err := lock.NewLease(client[lock.Record](t, url), "leases/x", lock.LeaseOptions{Holder: "one"})
	require.NoError(t, err)
	c2 := client[lock.Record](t, url)
	second, err := lock.NewLease(c2, "leases/x", lock.LeaseOptions{Holder: "two"})
	require.NoError(t, err)

	held, err := first.Acquire(t.Context())
	require.NoError(t, err)
	_, ok, err := second.TryAcquire(t.Context())
	require.NoError(t, err)
	require.False(t, ok, "the lease is held")

	got := make(chan lock.Lock, 1)
	go func() {
		l, err := second.Acquire(t.Context())
		if err == nil {
			got <- l
		}
		close(got)
	}()
	require.NoError(t, held.Release(t.Context()))
	l, ok := <-got
	require.True(t, ok, "the second contender acquired the lease")
	require.Greater(t, l.Token(), held.Token())
	_, err = c2.Create(t.Context(), "work", lock.Record{Holder: "one"}, held.Guard())
	require.ErrorIs(t, err, store.ErrGuardFailed, "a write fenced by the released term")
	require.NoError(t, l.Release(t.Context()))
}

// TestHandlerMountedUnderAPathServesAClientOfThatPath: a handler behind
// http.StripPrefix serves a client whose base URL has that path.
func TestHandlerMountedUnderAPathServesAClientOfThatPath(t *testing.T) {
	m := store.NewMemory[*item]()
	t.Cleanup(func() { _ = m.Close() })
	h, err := httpstore.NewHandler[*item](m)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/store/", http.StripPrefix("/store", h))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c := client[*item](t, srv.URL+"/store/")
	w, err := c.Watch(t.Context(), "", 0)
	require.NoError(t, err)
	defer w.Stop()
	obj, err := c.Create(t.Context(), "a", &item{N: 1})
	require.NoError(t, err)
	require.Equal(t, obj, (<-w.Events()).Object)
}
