package httpstore_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
	"github.com/stretchr/testify/require"
)

// failing is a store whose Get, Update and watches fail with err.
type failing struct {
	store.Store[*item]
	err error
}

func (f failing) Get(context.Context, string) (store.Object[*item], error) {
	return store.Object[*item]{}, fmt.Errorf("detail: %w", f.err)
}

func (f failing) Update(context.Context, string, *item, int64, ...store.Guard) (store.Object[*item], error) {
	return store.Object[*item]{}, fmt.Errorf("detail: %w", f.err)
}

func (f failing) Watch(context.Context, string, int64) (store.Watcher[*item], error) {
	w := &endedWatcher{events: make(chan store.Event[*item]), err: f.err}
	close(w.events)
	return w, nil
}

type endedWatcher struct {
	events chan store.Event[*item]
	err    error
}

func (w *endedWatcher) Events() <-chan store.Event[*item] { return w.events }
func (w *endedWatcher) Err() error                        { return w.err }
func (w *endedWatcher) Stop()                             {}

// TestEveryStoreErrorCrossesTheWireAsItself: whatever store error the
// served store returns, from a call or as the end of a watch, the client
// returns an error that errors.Is matches with the same sentinel, with the
// server's detail in its message.
func TestEveryStoreErrorCrossesTheWireAsItself(t *testing.T) {
	for _, sentinel := range []error{
		store.ErrNotFound, store.ErrExists, store.ErrConflict, store.ErrGuardFailed,
		store.ErrCompacted, store.ErrLagging, store.ErrUnavailable, store.ErrInvalid,
	} {
		m := store.NewMemory[*item]()
		t.Cleanup(func() { _ = m.Close() })
		c := client[*item](t, serve[*item](t, failing{m, sentinel}).URL, httpstore.WithWatchTimeout(50*time.Millisecond))
		_, err := c.Get(t.Context(), "k")
		require.ErrorIs(t, err, sentinel, "Get")
		require.Contains(t, err.Error(), "detail", "the server's message")
		_, err = c.Update(t.Context(), "k", &item{}, 1)
		require.ErrorIs(t, err, sentinel, "Update")

		w, err := c.Watch(t.Context(), "", 0)
		require.NoError(t, err)
		for range w.Events() {
			t.Fatal("an event from a watch that ended")
		}
		require.ErrorIs(t, w.Err(), sentinel, "the end of a watch")
	}
}

// TestWriteWhoseAnswerIsLostIsUnavailableAndSaysItMayHaveHappened: the
// server writes, then the connection drops before the answer: the client
// cannot know, and says so with store.ErrUnavailable.
func TestWriteWhoseAnswerIsLostIsUnavailableAndSaysItMayHaveHappened(t *testing.T) {
	m := store.NewMemory[*item]()
	t.Cleanup(func() { _ = m.Close() })
	h, err := httpstore.NewHandler[*item](m)
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(httptest.NewRecorder(), r) // the write happens, the answer is dropped
		panic(http.ErrAbortHandler)            // and the connection closes
	}))
	t.Cleanup(srv.Close)
	c := client[*item](t, srv.URL)
	_, err = c.Create(t.Context(), "k", &item{N: 1})
	require.ErrorIs(t, err, store.ErrUnavailable)
	require.True(t, strings.Contains(err.Error(), "may have happened"), "the error says the write may have happened: %v", err)
	got, err := m.Get(t.Context(), "k")
	require.NoError(t, err, "the write did happen")
	require.Equal(t, 1, got.Value.N)
}

// TestAnswerOfAnotherServerIsAProtocolError: a URL that is not a store
// server (here a 404 page) never passes for store.ErrNotFound.
func TestAnswerOfAnotherServerIsAProtocolErrorNotNotFound(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	c := client[*item](t, srv.URL)
	_, err := c.Get(t.Context(), "k")
	require.ErrorIs(t, err, httpstore.ErrProtocol)
	require.NotErrorIs(t, err, store.ErrNotFound)
}

func TestBadOptionsAreInvalid(t *testing.T) {
	m := store.NewMemory[*item]()
	t.Cleanup(func() { _ = m.Close() })
	for name, opt := range map[string]httpstore.HandlerOption{
		"nil":                nil,
		"empty token":        httpstore.WithReadWriteToken(""),
		"heartbeat":          httpstore.WithHeartbeat(0),
		"max watches":        httpstore.WithMaxWatches(0),
		"max body":           httpstore.WithMaxBodyBytes(0),
		"codec mismatch":     httpstore.WithHandlerCodec[int](store.JSON[int]{}),
		"host with scheme":   httpstore.WithAllowedHosts("http://store.example"),
		"host with port":     httpstore.WithAllowedHosts("store.example:7007"),
		"empty host":         httpstore.WithAllowedHosts(""),
		"origin not a URL":   httpstore.WithTrustedOrigins("not a url"),
		"origin with a path": httpstore.WithTrustedOrigins("https://console.example/admin"),
	} {
		_, err := httpstore.NewHandler[*item](m, opt)
		require.ErrorIs(t, err, store.ErrInvalid, name)
	}
	_, err := httpstore.NewHandler[*item](nil)
	require.ErrorIs(t, err, store.ErrInvalid, "nil store")
	for name, opt := range map[string]httpstore.ClientOption{
		"nil":            nil,
		"empty token":    httpstore.WithToken(""),
		"nil TLS":        httpstore.WithTLSConfig(nil),
		"nil client":     httpstore.WithHTTPClient(nil),
		"watch timeout":  httpstore.WithWatchTimeout(0),
		"codec mismatch": httpstore.WithClientCodec[int](store.JSON[int]{}),
	} {
		_, err := httpstore.New[*item]("http://localhost", opt)
		require.ErrorIs(t, err, store.ErrInvalid, name)
	}
	for _, u := range []string{"", "localhost:80", "ftp://x", "http://", "http://x/?q=1", "http://u:p@x"} {
		_, err := httpstore.New[*item](u)
		require.ErrorIs(t, err, store.ErrInvalid, "URL %q", u)
	}
}
