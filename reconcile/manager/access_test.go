package manager_test

import (
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/manager"
	"github.com/converge-go/converge/reconcile/observe/debugpage"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
)

const (
	debugToken = "debug-token-4c1f"
	base       = "http://127.0.0.1"
)

// reachCounter counts the requests that reach the handlers it wraps.
type reachCounter struct{ n atomic.Int32 }

func (c *reachCounter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.n.Add(1)
		h.ServeHTTP(w, r)
	})
}

// mounts returns what a daemon mounts (the debug page, metrics, a store
// API, an action), each counted by c.
func mounts(c *reachCounter) map[string]http.Handler {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "served") })
	return map[string]http.Handler{
		"/debug/converge/": c.wrap(debugpage.New(debugpage.Options{})),
		"GET /metrics":     c.wrap(ok),
		"/store/":          c.wrap(ok),
		"POST /act":        c.wrap(ok),
	}
}

// every request a daemon serves, as method and path.
var everyPath = [][2]string{
	{http.MethodGet, "/debug/converge/"}, {http.MethodHead, "/debug/converge/"},
	{http.MethodGet, "/metrics"}, {http.MethodGet, "/store/v1/list"},
	{http.MethodPost, "/store/v1/create?key=a"}, {http.MethodPost, "/act"},
	{http.MethodGet, "/unmounted"}, {http.MethodPost, "/healthz"},
}

// TestWithTokensARequestWithoutOneReachesNoHandler: once Tokens is set, a
// request without a token, with an unknown one or another scheme, to any
// path but the probes, the debug page included, is answered 401 with
// WWW-Authenticate: Bearer and reaches no handler; with a token it is
// served.
func TestWithTokensARequestWithoutOneReachesNoHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var reached reachCounter
		s := servePipe(t, manager.Options{}, manager.ServerOptions{Tokens: []string{"other-token", debugToken}}, mounts(&reached))
		for _, p := range everyPath {
			for _, auth := range []string{"", "Bearer wrong-token", "Basic " + debugToken, "Bearer " + debugToken + "x"} {
				r := newRequest(t, p[0], base+p[1], "Authorization", auth)
				resp, err := s.client.Do(r)
				require.NoError(t, err)
				body, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				resp.Body.Close()
				require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%s %s with %q", p[0], p[1], auth)
				require.Equal(t, "Bearer", resp.Header.Get("WWW-Authenticate"))
				require.NotContains(t, string(body), debugToken)
			}
		}
		require.Zero(t, reached.n.Load(), "a request without a token reached a handler")

		code, body := s.do(t, newRequest(t, http.MethodGet, base+"/debug/converge/", "Authorization", "Bearer "+debugToken))
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, "<html")
		code, _ = s.do(t, newRequest(t, http.MethodPost, base+"/act", "Authorization", "bearer other-token"))
		require.Equal(t, http.StatusOK, code)
		require.EqualValues(t, 2, reached.n.Load())
	})
}

// TestProbesWithoutATokenTellTheStatusButNoDetail: with Tokens set,
// /healthz and /readyz answer a request without a token with the status
// code and one word, never the failed checks (which name keys and
// errors); with a token they answer in full.
func TestProbesWithoutATokenTellTheStatusButNoDetail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stopped := make(chan struct{})
		r := mgrChecked{&mgrRunnable{name: "jobs", run: untilDone(stopped)}}
		s := servePipe(t, manager.Options{}, manager.ServerOptions{Tokens: []string{debugToken}}, nil, r)
		synctest.Wait()
		probe := func(path string, headers ...string) (int, string) {
			return s.do(t, newRequest(t, http.MethodGet, base+path, headers...))
		}
		withToken := []string{"Authorization", "Bearer " + debugToken}

		for _, path := range []string{"/healthz", "/readyz"} {
			code, body := probe(path)
			require.Equal(t, http.StatusOK, code, path)
			require.Equal(t, "ok\n", body, path)
		}
		r.set(errors.New("cache cold at key tenant-a/job-7"), errors.New("store: connection refused by db.internal"))
		code, body := probe("/readyz")
		require.Equal(t, http.StatusServiceUnavailable, code)
		require.Equal(t, "unready\n", body)
		code, body = probe("/healthz", "Authorization", "Bearer wrong")
		require.Equal(t, http.StatusServiceUnavailable, code)
		require.Equal(t, "unhealthy\n", body)

		code, body = probe("/readyz", withToken...)
		require.Equal(t, http.StatusServiceUnavailable, code)
		require.Equal(t, "jobs: cache cold at key tenant-a/job-7\n", body)
		code, body = probe("/healthz", withToken...)
		require.Equal(t, http.StatusServiceUnavailable, code)
		require.Contains(t, body, "db.internal")
	})
}

// TestAForgedHostIsRefusedOnEveryPath: a request whose Host names a host
// the server does not answer to (a DNS-rebinding page's) is answered 403
// on every path, the probes included, whatever its token, and reaches no
// handler; a host listed in AllowedHosts is served.
func TestAForgedHostIsRefusedOnEveryPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var reached reachCounter
		s := servePipe(t, manager.Options{}, manager.ServerOptions{Tokens: []string{debugToken}, AllowedHosts: []string{"ops.example"}}, mounts(&reached))
		paths := append([][2]string{{http.MethodGet, "/healthz"}, {http.MethodGet, "/readyz"}}, everyPath...)
		for _, host := range []string{"rebind.example", "127.0.0.1.nip.io:80", "localhost.rebind.example"} {
			for _, p := range paths {
				for _, auth := range []string{"", "Bearer " + debugToken} {
					r := newRequest(t, p[0], base+p[1], "Authorization", auth)
					r.Host = host
					code, body := s.do(t, r)
					require.Equal(t, http.StatusForbidden, code, "%s %s, Host %s", p[0], p[1], host)
					if p[0] != http.MethodHead {
						require.Contains(t, body, "Host")
					}
				}
			}
		}
		require.Zero(t, reached.n.Load(), "a request with a forged Host reached a handler")

		for _, host := range []string{"ops.example:8080", "localhost", "[::1]:80"} {
			r := newRequest(t, http.MethodGet, base+"/metrics", "Authorization", "Bearer "+debugToken)
			r.Host = host
			code, _ := s.do(t, r)
			require.Equal(t, http.StatusOK, code, host)
		}
	})
}

// TestCrossOriginStateChangesReachNoHandler: a POST from another origin's
// page (told by Sec-Fetch-Site or Origin), from a file:// page (Origin
// "null") or from a "simple" text/plain form is answered 403 whatever its
// token, and its handler is never called.
func TestCrossOriginStateChangesReachNoHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, tokens := range [][]string{nil, {debugToken}} {
			var reached reachCounter
			s := servePipe(t, manager.Options{}, manager.ServerOptions{Tokens: tokens, TrustedOrigins: []string{"https://console.example"}}, mounts(&reached))
			for name, headers := range map[string][]string{
				"cross-site":            {"Sec-Fetch-Site", "cross-site", "Origin", "http://evil.example"},
				"same site, other port": {"Sec-Fetch-Site", "same-site", "Origin", "http://127.0.0.1:8000"},
				"file:// page":          {"Sec-Fetch-Site", "cross-site", "Origin", "null"},
				"null Origin only":      {"Origin", "null"},
				"foreign Origin only":   {"Origin", "http://evil.example"},
				"simple text/plain":     {"Sec-Fetch-Site", "cross-site", "Origin", "http://evil.example", "Content-Type", "text/plain"},
			} {
				for _, target := range []string{"/act", "/store/v1/create?key=a", "/debug/converge/"} {
					r := newRequest(t, http.MethodPost, base+target, append(headers, "Authorization", "Bearer "+debugToken)...)
					code, body := s.do(t, r)
					require.Equal(t, http.StatusForbidden, code, "%s to %s", name, target)
					require.Contains(t, body, "origin")
				}
			}
			require.Zero(t, reached.n.Load(), "a cross-origin POST reached a handler")
		}
	})
}

// TestSameOriginAndNonBrowserStateChangesAreServed: a POST from the
// server's own origin, from a trusted origin, or without browser headers
// (curl, Go) reaches its handler; a cross-origin GET, which changes
// nothing, too.
func TestSameOriginAndNonBrowserStateChangesAreServed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var reached reachCounter
		s := servePipe(t, manager.Options{}, manager.ServerOptions{TrustedOrigins: []string{"https://console.example"}}, mounts(&reached))
		for name, r := range map[string]*http.Request{
			"same origin":           newRequest(t, http.MethodPost, base+"/act", "Sec-Fetch-Site", "same-origin", "Origin", base),
			"same origin, no fetch": newRequest(t, http.MethodPost, base+"/act", "Origin", base),
			"trusted origin":        newRequest(t, http.MethodPost, base+"/act", "Sec-Fetch-Site", "cross-site", "Origin", "https://console.example"),
			"no browser headers":    newRequest(t, http.MethodPost, base+"/act"),
			"cross-origin GET":      newRequest(t, http.MethodGet, base+"/metrics", "Sec-Fetch-Site", "cross-site", "Origin", "http://evil.example"),
		} {
			code, body := s.do(t, r)
			require.Equal(t, http.StatusOK, code, name)
			require.Equal(t, "served", body, name)
		}
		require.EqualValues(t, 5, reached.n.Load())
	})
}

// TestAMountedStoreStillAppliesItsOwnWritePermissions: the token the
// server accepted reaches the mounted store handler, which still decides
// what it may do: a read-only token reads but cannot write, a read-write
// token writes, and a token the server takes but the store does not is
// refused by the store.
func TestAMountedStoreStillAppliesItsOwnWritePermissions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rw, ro = "store-rw-token", "store-ro-token"
		mem := store.NewMemory[*item]()
		h, err := httpstore.NewHandler[*item](mem, httpstore.WithReadWriteToken(rw), httpstore.WithReadOnlyToken(ro))
		require.NoError(t, err)
		s := servePipe(t, manager.Options{}, manager.ServerOptions{Tokens: []string{rw, ro, debugToken}},
			map[string]http.Handler{"/store/": http.StripPrefix("/store", h)})
		client := func(tok string) *httpstore.Client[*item] {
			c, err := httpstore.New[*item](base+"/store", httpstore.WithHTTPClient(s.client), httpstore.WithToken(tok))
			require.NoError(t, err)
			t.Cleanup(func() { c.Close() })
			return c
		}

		_, err = client(ro).Create(t.Context(), "a", &item{N: 1})
		require.ErrorIs(t, err, httpstore.ErrForbidden)
		_, err = client(debugToken).Create(t.Context(), "a", &item{N: 1})
		require.ErrorIs(t, err, httpstore.ErrUnauthorized)
		_, err = client(rw).Create(t.Context(), "a", &item{N: 1})
		require.NoError(t, err)
		obj, err := client(ro).Get(t.Context(), "a")
		require.NoError(t, err)
		require.Equal(t, 1, obj.Value.N)
	})
}
