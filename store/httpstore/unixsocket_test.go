package httpstore_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/converge-go/converge/reconcile/manager"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
	"github.com/stretchr/testify/require"
)

// socketPath returns the path of a Unix socket in a new directory, short
// enough for the kernel's limit on socket paths (108 bytes on Linux).
func socketPath(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "httpstore")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return filepath.Join(dir, "store.sock")
}

// unixHTTPClient returns an HTTP client whose every connection goes to
// the Unix socket at path, whatever the URL's host.
func unixHTTPClient(t *testing.T, path string) *http.Client {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		},
	}}
	t.Cleanup(hc.CloseIdleConnections)
	return hc
}

// serveUnix serves the store m on a Unix socket, by an http.Server of
// its own or mounted at /store on a manager's server with a token, and
// returns the socket's path and the store's path on the server.
func serveUnix(t *testing.T, m store.Store[*item], onManager bool) (socket, path string) {
	t.Helper()
	socket = socketPath(t)
	ln, err := net.Listen("unix", socket)
	require.NoError(t, err)
	if !onManager {
		h, err := httpstore.NewHandler[*item](m)
		require.NoError(t, err)
		srv := httpstore.NewServer("", h)
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { _ = srv.Close() })
		return socket, ""
	}
	h, err := httpstore.NewHandler[*item](m, httpstore.WithReadWriteToken(rwToken))
	require.NoError(t, err)
	mgr, err := manager.New(manager.Options{Server: &manager.ServerOptions{Listener: ln, Tokens: []string{rwToken}}})
	require.NoError(t, err)
	require.NoError(t, mgr.Handle("/store/", http.StripPrefix("/store", h)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return socket, "/store"
}

// TestAClientTalksToAStoreOverAUnixSocket: a store served on a Unix
// socket, by an http.Server of its own or on a manager's server
// (ServerOptions.Listener), is a store to a Client whose HTTP client dials
// the socket (WithHTTPClient) and whose base URL names localhost: it
// writes, reads and watches. A base URL naming another host is refused by
// the Host check, whatever the socket, and writes nothing.
func TestAClientTalksToAStoreOverAUnixSocket(t *testing.T) {
	for name, onManager := range map[string]bool{"own server": false, "manager": true} {
		t.Run(name, func(t *testing.T) {
			m := store.NewMemory[*item]()
			t.Cleanup(func() { _ = m.Close() })
			socket, path := serveUnix(t, m, onManager)
			opts := []httpstore.ClientOption{httpstore.WithHTTPClient(unixHTTPClient(t, socket))}
			if onManager {
				opts = append(opts, httpstore.WithToken(rwToken))
			}
			c := client[*item](t, "http://localhost"+path, opts...)
			w, err := c.Watch(t.Context(), "", 0)
			require.NoError(t, err)
			defer w.Stop()
			obj, err := c.Create(t.Context(), "a", &item{N: 1})
			require.NoError(t, err)
			require.Equal(t, store.Event[*item]{Type: store.Created, Object: obj}, <-w.Events())
			got, err := c.Get(t.Context(), "a")
			require.NoError(t, err)
			require.Equal(t, obj, got)

			named := client[*item](t, "http://store.sock"+path, opts...)
			_, err = named.Create(t.Context(), "b", &item{N: 2})
			require.ErrorIs(t, err, httpstore.ErrForbidden)
			rev, err := m.Revision(t.Context())
			require.NoError(t, err)
			require.Equal(t, obj.Revision, rev, "the refused write wrote nothing")
		})
	}
}
