package httpstore_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/converge-go/converge/reconcile/manager"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
	"github.com/stretchr/testify/require"
)

// requireRefusal checks that err is want, not a store the client cannot
// reach, and shows the text of the server that refused, bounded.
func requireRefusal(t *testing.T, err, want error, text string) {
	t.Helper()
	require.ErrorIs(t, err, want)
	require.False(t, errors.Is(err, store.ErrUnavailable), "a refusal is not unavailability: %v", err)
	require.False(t, errors.Is(err, httpstore.ErrProtocol), "%v", err)
	require.Contains(t, err.Error(), text)
	require.Less(t, len(err.Error()), 400, "the server's text is bounded")
}

// A server in front of the handler (a manager checking tokens, a proxy)
// answers its refusals in its own words: the client still reports them as
// refusals, not as a server it cannot reach, so that callers retrying
// unavailable stores do not retry a missing token forever.
func TestRefusalsOfAServerInFrontAreUnauthorizedAndForbiddenNotUnavailable(t *testing.T) {
	for _, tc := range []struct {
		status int
		want   error
	}{
		{http.StatusUnauthorized, httpstore.ErrUnauthorized},
		{http.StatusForbidden, httpstore.ErrForbidden},
	} {
		front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "refused by the front"+strings.Repeat(" and again", 1<<16), tc.status)
		}))
		c, err := httpstore.New[*item](front.URL)
		require.NoError(t, err)
		_, err = c.Get(t.Context(), "k")
		requireRefusal(t, err, tc.want, "refused by the front")
		_, err = c.Create(t.Context(), "k", &item{N: 1})
		requireRefusal(t, err, tc.want, "refused by the front")
		_, err = c.Watch(t.Context(), "", 0)
		requireRefusal(t, err, tc.want, "refused by the front")
		c.Close()
		front.Close()
	}
}

// manageStore serves a memory store holding "seed", with the read-write
// token rwToken, at /store/ of a manager's server on loopback with opts,
// and returns the server's address.
func manageStore(t *testing.T, opts manager.ServerOptions) (*store.Memory[*item], string) {
	t.Helper()
	m := store.NewMemory[*item]()
	t.Cleanup(func() { _ = m.Close() })
	_, err := m.Create(t.Context(), "seed", &item{N: 1})
	require.NoError(t, err)
	h, err := httpstore.NewHandler[*item](m, httpstore.WithReadWriteToken(rwToken))
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	opts.Listener = ln
	mgr, err := manager.New(manager.Options{Server: &opts})
	require.NoError(t, err)
	require.NoError(t, mgr.Handle("/store/", http.StripPrefix("/store", h)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return m, ln.Addr().String()
}

// TestAManagersRefusalsInFrontOfAStoreAreUnauthorizedAndForbidden: a store
// mounted on a reconcile/manager server with Tokens and its Host and origin
// guard gets the manager's plain-text 401 and 403 before the store
// handler runs; the client reports them as ErrUnauthorized and
// ErrForbidden with the manager's reason, never as unavailable, a watch
// included, and nothing is written.
func TestAManagersRefusalsInFrontOfAStoreAreUnauthorizedAndForbidden(t *testing.T) {
	m, addr := manageStore(t, manager.ServerOptions{Tokens: []string{rwToken}})
	base := "http://" + addr + "/store"
	for _, tok := range []string{"", "unknown-token-0123456789"} {
		var opts []httpstore.ClientOption
		if tok != "" {
			opts = append(opts, httpstore.WithToken(tok))
		}
		c := client[*item](t, base, opts...)
		for name, err := range tryAll(t, c) {
			requireRefusal(t, err, httpstore.ErrUnauthorized, "manager: bearer: unauthorized")
			require.NotContains(t, err.Error(), rwToken, name)
		}
	}

	rebound := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}}
	t.Cleanup(rebound.CloseIdleConnections)
	foreign := client[*item](t, "http://rebound.example/store", httpstore.WithToken(rwToken), httpstore.WithHTTPClient(rebound))
	for _, err := range tryAll(t, foreign) {
		requireRefusal(t, err, httpstore.ErrForbidden, "manager: the Host header")
	}

	page := &headerSetter{headers: map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}}
	crossOrigin := client[*item](t, base, httpstore.WithToken(rwToken), httpstore.WithHTTPClient(&http.Client{Transport: page}))
	_, err := crossOrigin.Create(t.Context(), "new", &item{N: 2})
	requireRefusal(t, err, httpstore.ErrForbidden, "manager: a state-changing request from another origin")
	unchanged(t, m)

	_, err = client[*item](t, base, httpstore.WithToken(rwToken)).Create(t.Context(), "new", &item{N: 2})
	require.NoError(t, err, "the manager lets the token through to the store")
}
