package manager_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/manager"
	"github.com/converge-go/converge/store/httpstore"
)

// patience bounds waits on real sockets: a safety net, not an assertion
// about speed.
const patience = 10 * time.Second

// serve runs m until the returned stop is called, and returns the base URL
// of its HTTP server once it listens.
func serve(t *testing.T, m *manager.Manager) (base string, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	deadline := time.Now().Add(patience)
	for m.Addr() == nil {
		require.True(t, time.Now().Before(deadline), "the server did not listen")
		select {
		case err := <-done:
			t.Fatalf("Run returned before serving: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	return "http://" + m.Addr().String(), func() error { cancel(); return <-done }
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// TestServerServesProbesAndMountedHandlersOnOneAddress: with Options.Server
// the manager serves /healthz, /readyz and what Handle mounted on one
// address, and stops serving when Run returns.
func TestServerServesProbesAndMountedHandlersOnOneAddress(t *testing.T) {
	m, err := manager.New(manager.Options{Server: &manager.ServerOptions{Addr: "127.0.0.1:0"}})
	require.NoError(t, err)
	require.NoError(t, m.Handle("GET /hello", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "hello")
	})))
	base, stop := serve(t, m)

	code, body := get(t, base+"/healthz")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "ok\n", body)
	code, _ = get(t, base+"/readyz")
	require.Equal(t, http.StatusOK, code)
	code, body = get(t, base+"/hello")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "hello", body)

	require.NoError(t, stop())
	_, err = http.Get(base + "/healthz")
	require.Error(t, err, "the server still answers after Run returned")
}

// TestServerShutdownLetsInFlightRequestsFinish: a request in flight when the
// manager stops gets its whole response; Run returns after it.
func TestServerShutdownLetsInFlightRequestsFinish(t *testing.T) {
	m, err := manager.New(manager.Options{Server: &manager.ServerOptions{Addr: "127.0.0.1:0"}})
	require.NoError(t, err)
	entered, release := make(chan struct{}), make(chan struct{})
	require.NoError(t, m.Handle("GET /slow", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		close(entered)
		<-release
		io.WriteString(w, "done")
	})))
	base, stop := serve(t, m)
	type result struct {
		code int
		body string
		err  error
	}
	got := make(chan result, 1)
	go func() {
		resp, err := http.Get(base + "/slow")
		if err != nil {
			got <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		got <- result{resp.StatusCode, string(b), err}
	}()
	<-entered
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	close(release)
	r := <-got
	require.NoError(t, r.err)
	require.Equal(t, http.StatusOK, r.code)
	require.Equal(t, "done", r.body)
	require.NoError(t, <-stopped)
}

// TestServerClosesStreamsThatOutliveTheShutdownTimeout: a handler that
// streams until its client leaves cannot hold the manager's Run beyond the
// shutdown timeout; Run still returns cleanly.
func TestServerClosesStreamsThatOutliveTheShutdownTimeout(t *testing.T) {
	// The server closes what still runs at half the timeout and leaves the
	// other half to the manager: 2 s leaves a margin on a loaded machine
	// (at 50 ms, a CI run under load missed the manager's deadline).
	m, err := manager.New(manager.Options{
		ShutdownTimeout: 2 * time.Second,
		Server:          &manager.ServerOptions{Addr: "127.0.0.1:0"},
	})
	require.NoError(t, err)
	entered := make(chan struct{})
	require.NoError(t, m.Handle("GET /stream", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		close(entered)
		<-r.Context().Done() // until the connection is closed
	})))
	base, stop := serve(t, m)
	resp, err := http.Get(base + "/stream")
	require.NoError(t, err)
	defer resp.Body.Close()
	<-entered
	require.NoError(t, stop())
	_, err = io.ReadAll(resp.Body)
	require.Error(t, err, "the stream was not closed")
}

// TestHandleRefusesWhatCannotBeServed: mounting needs a server, a handler, a
// valid and unused pattern, and must happen before Run.
func TestHandleRefusesWhatCannotBeServed(t *testing.T) {
	ok := http.NotFoundHandler()
	plain, err := manager.New(manager.Options{})
	require.NoError(t, err)
	require.ErrorIs(t, plain.Handle("/x", ok), manager.ErrInvalid, "no server")

	m, err := manager.New(manager.Options{Server: &manager.ServerOptions{Addr: "127.0.0.1:0"}})
	require.NoError(t, err)
	require.ErrorIs(t, m.Handle("/x", nil), manager.ErrInvalid)
	require.ErrorIs(t, m.Handle("GET /healthz", ok), manager.ErrInvalid, "duplicate of a probe")
	require.ErrorIs(t, m.Handle("", ok), manager.ErrInvalid)
	require.NoError(t, m.Handle("/x", ok))
	_, stop := serve(t, m)
	require.ErrorIs(t, m.Handle("/y", ok), manager.ErrAlreadyRunning)
	require.NoError(t, stop())

	_, err = manager.New(manager.Options{Server: &manager.ServerOptions{}})
	require.ErrorIs(t, err, manager.ErrInvalid, "no address")
	_, err = manager.New(manager.Options{Server: &manager.ServerOptions{Addr: ":0", IdleTimeout: -1}})
	require.ErrorIs(t, err, manager.ErrInvalid)
}

// TestMalformedServerOptionsAreInvalid: a negative limit, a token that
// could never be presented, a host with a scheme or port, or an origin
// that is not one make New fail with ErrInvalid, and the error never
// shows a token.
func TestMalformedServerOptionsAreInvalid(t *testing.T) {
	for name, o := range map[string]manager.ServerOptions{
		"negative ReadHeaderTimeout": {ReadHeaderTimeout: -1},
		"negative ReadTimeout":       {ReadTimeout: -time.Second},
		"negative WriteTimeout":      {WriteTimeout: -time.Second},
		"negative IdleTimeout":       {IdleTimeout: -1},
		"negative MaxHeaderBytes":    {MaxHeaderBytes: -1},
		"empty token":                {Tokens: []string{"good-secret", ""}},
		"token with a space at end":  {Tokens: []string{"spaced-secret "}},
		"token with a newline":       {Tokens: []string{"line\nsecret"}},
		"host with a scheme":         {AllowedHosts: []string{"http://ops.example"}},
		"host with a port":           {AllowedHosts: []string{"ops.example:8080"}},
		"empty host":                 {AllowedHosts: []string{""}},
		"origin not a URL":           {TrustedOrigins: []string{"not an origin"}},
		"origin with a path":         {TrustedOrigins: []string{"https://console.example/app"}},
	} {
		o.Addr = "127.0.0.1:0"
		_, err := manager.New(manager.Options{Server: &o})
		require.ErrorIs(t, err, manager.ErrInvalid, name)
		require.NotContains(t, err.Error(), "secret", name)
	}
}

// TestTheDefaultLimitsAreThoseHTTPStoreRecommends: a zero ServerOptions
// limit is the one httpstore.NewServer sets.
func TestTheDefaultLimitsAreThoseHTTPStoreRecommends(t *testing.T) {
	require.Equal(t, httpstore.ServerReadHeaderTimeout, manager.DefaultReadHeaderTimeout)
	require.Equal(t, httpstore.ServerReadTimeout, manager.DefaultReadTimeout)
	require.Equal(t, httpstore.ServerWriteTimeout, manager.DefaultWriteTimeout)
	require.Equal(t, httpstore.ServerIdleTimeout, manager.DefaultIdleTimeout)
	require.Equal(t, httpstore.ServerMaxHeaderBytes, manager.DefaultMaxHeaderBytes)
}

// TestShutdownRunsTheHooksHandlersRegisterOnTheServer: stopping the
// manager calls Shutdown on the http.Server that serves its requests, so
// a handler that ends its stream on RegisterOnShutdown finishes it
// cleanly, long before the shutdown timeout would close it.
func TestShutdownRunsTheHooksHandlersRegisterOnTheServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			srv := r.Context().Value(http.ServerContextKey).(*http.Server)
			ending := make(chan struct{})
			srv.RegisterOnShutdown(func() { close(ending) })
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-ending
			io.WriteString(w, "end of stream")
		})
		s := servePipe(t, manager.Options{ShutdownTimeout: time.Hour}, manager.ServerOptions{}, map[string]http.Handler{"GET /stream": stream})
		resp, err := s.client.Do(newRequest(t, http.MethodGet, base+"/stream"))
		require.NoError(t, err)
		defer resp.Body.Close()
		stopped := make(chan error, 1)
		go func() { stopped <- s.stop() }()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err, "the stream was cut instead of ended")
		require.Equal(t, "end of stream", string(body))
		require.NoError(t, <-stopped)
	})
}
