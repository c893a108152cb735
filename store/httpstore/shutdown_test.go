package httpstore_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/internal/pipenet"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
	"github.com/stretchr/testify/require"
)

// switchNet dials whichever pipenet it was last pointed at: a client's
// server restarts (or moves) under it.
type switchNet struct {
	mu sync.Mutex
	pn *pipenet.Listener
}

func (s *switchNet) to(pn *pipenet.Listener) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pn = pn
}

func (s *switchNet) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	s.mu.Lock()
	pn := s.pn
	s.mu.Unlock()
	return pn.DialContext(ctx, network, addr)
}

// servePipeServer serves h on a new pipenet with an http.Server and
// returns both; the server's Serve result arrives on served.
func servePipeServer(h http.Handler) (srv *http.Server, pn *pipenet.Listener, served <-chan error) {
	pn = pipenet.New()
	srv = &http.Server{Handler: h}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(pn) }()
	return srv, pn, done
}

func TestShutdownEndsWatchStreamsAtOnceAndTheWatchResumesOnTheNextServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := store.NewMemory[*item]()
		defer m.Close()
		h, err := httpstore.NewHandler[*item](m, httpstore.WithHeartbeat(time.Hour))
		require.NoError(t, err)
		srv, pn, served := servePipeServer(h)
		sn := &switchNet{pn: pn}
		hc := &http.Client{Transport: &http.Transport{DialContext: sn.dial}}
		defer hc.CloseIdleConnections()
		c, err := httpstore.New[*item]("http://pipe.localhost", httpstore.WithHTTPClient(hc))
		require.NoError(t, err)

		var watches []store.Watcher[*item]
		for range 2 {
			w, err := c.Watch(t.Context(), "", 0)
			require.NoError(t, err)
			defer w.Stop()
			watches = append(watches, w)
		}
		a, err := m.Create(t.Context(), "a", &item{N: 1})
		require.NoError(t, err)
		for _, w := range watches {
			require.Equal(t, a, (<-w.Events()).Object)
		}

		// Shutdown waits for active requests; the open watches must not
		// hold it until its deadline.
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		require.NoError(t, srv.Shutdown(ctx), "Shutdown with watches open")
		require.ErrorIs(t, <-served, http.ErrServerClosed)

		// The next server serves the same store: each watch resumes on it
		// after the last change it delivered, missing and repeating none.
		next, pn2, served2 := servePipeServer(h)
		sn.to(pn2)
		b, err := m.Create(t.Context(), "b", &item{N: 2})
		require.NoError(t, err)
		for _, w := range watches {
			ev := <-w.Events()
			require.Equal(t, store.Created, ev.Type)
			require.Equal(t, b, ev.Object, "the first event after the restart")
			w.Stop()
		}
		require.NoError(t, next.Shutdown(ctx))
		require.ErrorIs(t, <-served2, http.ErrServerClosed)
	})
}

func TestAWatchOfAServerThatShutsDownForGoodEndsWithErrUnavailable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := store.NewMemory[*item]()
		defer m.Close()
		h, err := httpstore.NewHandler[*item](m, httpstore.WithHeartbeat(time.Hour))
		require.NoError(t, err)
		srv, pn, served := servePipeServer(h)
		hc := pn.Client()
		defer hc.CloseIdleConnections()
		// The client judges the stream dead after two heartbeats (two
		// hours), so only the server can end it within Shutdown's minute.
		c, err := httpstore.New[*item]("http://pipe.localhost", httpstore.WithHTTPClient(hc))
		require.NoError(t, err)
		w, err := c.Watch(t.Context(), "", 0)
		require.NoError(t, err)
		defer w.Stop()

		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		require.NoError(t, srv.Shutdown(ctx), "Shutdown with a watch open")
		require.ErrorIs(t, <-served, http.ErrServerClosed)
		for ev := range w.Events() {
			t.Fatalf("a watch of a server gone delivered %v", ev)
		}
		require.ErrorIs(t, w.Err(), store.ErrUnavailable)
	})
}

func TestAWatchAskedOfAServerShuttingDownIsRefusedAsUnavailable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := store.NewMemory[*item]()
		defer m.Close()
		h, err := httpstore.NewHandler[*item](m, httpstore.WithHeartbeat(time.Hour))
		require.NoError(t, err)
		srv := &http.Server{Handler: h}
		watch := func(ctx context.Context) *httptest.ResponseRecorder {
			r := httptest.NewRequestWithContext(context.WithValue(ctx, http.ServerContextKey, srv),
				http.MethodGet, "http://127.0.0.1/v1/watch?after=0", nil)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			return rec
		}
		// A stream open when Shutdown begins ends with an end frame.
		done := make(chan *httptest.ResponseRecorder)
		go func() { done <- watch(t.Context()) }()
		synctest.Wait()
		require.NoError(t, srv.Shutdown(t.Context()))
		var rec *httptest.ResponseRecorder
		select {
		case rec = <-done:
		case <-time.After(time.Minute):
			t.Fatal("the stream goes on after Shutdown began")
		}
		require.Equal(t, http.StatusOK, rec.Code)
		require.Equal(t, "unavailable", lastFrameError(t, rec.Body.Bytes()))

		// A watch asked afterwards is refused.
		rec = watch(t.Context())
		require.Equal(t, http.StatusServiceUnavailable, rec.Code)
		var eb struct{ Error struct{ Code string } }
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &eb))
		require.Equal(t, "unavailable", eb.Error.Code)
	})
}

// lastFrameError returns the error code of a stream's last frame, which
// must be an end frame.
func lastFrameError(t *testing.T, stream []byte) string {
	t.Helper()
	var last struct {
		Type  string
		Error *struct{ Code string }
	}
	sc := bufio.NewScanner(bytes.NewReader(stream))
	for sc.Scan() {
		last.Error = nil
		require.NoError(t, json.Unmarshal(sc.Bytes(), &last))
	}
	require.Equal(t, "end", last.Type, "the stream's last frame")
	require.NotNil(t, last.Error, "the end frame says why")
	return last.Error.Code
}
