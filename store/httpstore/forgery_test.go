package httpstore_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
	"github.com/stretchr/testify/require"
)

// forgedBackends are the stores the forgery matrix runs over: Go values in
// memory, and JSON bytes (a View, which the handler trusts to check values
// itself).
var forgedBackends = map[string]func(t *testing.T) store.Store[*item]{
	"memory": func(t *testing.T) store.Store[*item] {
		m := store.NewMemory[*item]()
		t.Cleanup(func() { _ = m.Close() })
		return m
	},
	"view": func(t *testing.T) store.Store[*item] {
		raw := store.NewMemory[[]byte]()
		t.Cleanup(func() { _ = raw.Close() })
		return store.NewView[*item](raw, store.JSON[*item]{})
	},
}

// forgery is a request as a web page can make a browser send it (or as an
// attacker forges it): its headers, and the refusal it must get.
type forgery struct {
	name    string
	host    string // Host header; "" for the server's own address
	headers map[string]string
	status  int
	code    string
}

func forgeries(port string) []forgery {
	const evil = "http://evil.example"
	cross := func(origin, ct string) map[string]string {
		return map[string]string{"Origin": origin, "Sec-Fetch-Site": "cross-site", "Content-Type": ct}
	}
	return []forgery{
		{"simple request from another site (text/plain)", "", cross(evil, "text/plain"), 403, "forbidden"},
		{"form from another site (urlencoded)", "", cross(evil, "application/x-www-form-urlencoded"), 403, "forbidden"},
		{"form from another site (multipart)", "", cross(evil, "multipart/form-data; boundary=x"), 403, "forbidden"},
		{"JSON from another site (as if CORS were answered)", "", cross(evil, "application/json"), 403, "forbidden"},
		{"page opened from a file", "", cross("null", "text/plain"), 403, "forbidden"},
		{"page on another loopback port", "", map[string]string{"Origin": "http://127.0.0.1:1", "Sec-Fetch-Site": "same-site", "Content-Type": "application/json"}, 403, "forbidden"},
		{"old browser: Origin alone", "", map[string]string{"Origin": evil, "Content-Type": "application/json"}, 403, "forbidden"},
		{"DNS rebinding: same origin to the browser, foreign Host", "evil.example:" + port,
			map[string]string{"Origin": evil + ":" + port, "Sec-Fetch-Site": "same-origin", "Content-Type": "application/json"}, 403, "forbidden"},
		{"DNS rebinding through a loopback-looking name", "127.0.0.1.nip.io:" + port, map[string]string{"Content-Type": "application/json"}, 403, "forbidden"},
		{"text/plain without browser headers", "", map[string]string{"Content-Type": "text/plain"}, 415, "invalid"},
		{"form without browser headers", "", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, "invalid"},
		{"no Content-Type", "", nil, 415, "invalid"},
		{"a JSON-like type that is not JSON", "", map[string]string{"Content-Type": "application/json-seq"}, 415, "invalid"},
	}
}

// forgedWrites are the state-changing requests of the protocol, each with
// a body the handler would accept from a Go client.
var forgedWrites = []struct{ target, body string }{
	{"/v1/create?key=new", `{"n":2}`},
	{"/v1/update?key=seed&revision=1", `{"n":2}`},
	{"/v1/delete?key=seed&revision=1", ``},
	{"/v1/delete?key=seed&revision=1&propagation=background", ``},
	{"/v1/status?key=seed&revision=1", `{"n":2}`},
	{"/v1/apply?key=seed", `{"n":2}`},
	{"/v1/check?key=seed&revision=1", ``},
	{"/v1/batch", `{"writes":[{"key":"new","value":{"n":2}},{"key":"seed","revision":1,"delete":true}]}`},
	{"/v1/progress?watch=x&seq=1", ``},
}

func TestRequestsAWebPageCouldForgeAreRefusedAndWriteNothing(t *testing.T) {
	for backend, open := range forgedBackends {
		for _, tokens := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/tokens=%v", backend, tokens), func(t *testing.T) {
				s := open(t)
				_, err := s.Create(t.Context(), "seed", &item{N: 1})
				require.NoError(t, err)
				var opts []httpstore.HandlerOption
				if tokens {
					opts = append(opts, httpstore.WithReadWriteToken(rwToken))
				}
				srv := serve(t, s, opts...)
				u, err := url.Parse(srv.URL)
				require.NoError(t, err)
				for _, f := range forgeries(u.Port()) {
					for _, wr := range forgedWrites {
						req, err := http.NewRequest(http.MethodPost, srv.URL+wr.target, strings.NewReader(wr.body))
						require.NoError(t, err)
						forge(req, f, tokens)
						status, code := do(t, req)
						require.Equal(t, f.status, status, "%s: %s", f.name, wr.target)
						require.Equal(t, f.code, code, "%s: %s", f.name, wr.target)
					}
				}
				unchangedStore(t, s)
			})
		}
	}
}

// forge sets f's headers on req, and a valid token if withToken.
func forge(req *http.Request, f forgery, withToken bool) {
	for k, v := range f.headers {
		req.Header.Set(k, v)
	}
	if f.host != "" {
		req.Host = f.host
	}
	if withToken {
		req.Header.Set("Authorization", "Bearer "+rwToken)
	}
}

// unchangedStore checks that s still holds only "seed", at revision 1.
func unchangedStore(t *testing.T, s store.Store[*item]) {
	t.Helper()
	objs, rev, err := s.List(t.Context(), "")
	require.NoError(t, err)
	require.Equal(t, int64(1), rev, "the store's revision: something was written")
	require.Len(t, objs, 1)
	require.Equal(t, "seed", objs[0].Key)
	require.Equal(t, &item{N: 1}, objs[0].Value)
}

func TestAForeignHostIsRefusedForReadsToo(t *testing.T) {
	m := store.NewMemory[*item]()
	t.Cleanup(func() { _ = m.Close() })
	_, err := m.Create(t.Context(), "seed", &item{N: 1})
	require.NoError(t, err)
	srv := serve[*item](t, m)
	for _, target := range []string{"/v1/get?key=seed", "/v1/list?prefix=", "/v1/revision", "/v1/watch?after=0"} {
		req, err := http.NewRequest(http.MethodGet, srv.URL+target, nil)
		require.NoError(t, err)
		req.Host = "evil.example"
		status, code := do(t, req)
		require.Equal(t, http.StatusForbidden, status, target)
		require.Equal(t, "forbidden", code, target)
	}
}

// headerSetter adds headers to every request a Client sends, as a browser
// would to a page's requests, and records the Content-Type of each POST.
type headerSetter struct {
	headers map[string]string
	host    string

	mu   sync.Mutex
	post []string // Content-Type of each POST, in order
}

func (h *headerSetter) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range h.headers {
		req.Header.Set(k, v)
	}
	if h.host != "" {
		req.Host = h.host
	}
	if req.Method == http.MethodPost {
		h.mu.Lock()
		h.post = append(h.post, req.URL.Path+" "+req.Header.Get("Content-Type"))
		h.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(req)
}

func TestAClientGetsErrForbiddenNamingTheCauseForAForeignHostOrOrigin(t *testing.T) {
	m := store.NewMemory[*item]()
	t.Cleanup(func() { _ = m.Close() })
	_, err := m.Create(t.Context(), "seed", &item{N: 1})
	require.NoError(t, err)
	srv := serve[*item](t, m)
	for _, tc := range []struct {
		rt    *headerSetter
		cause string
	}{
		{&headerSetter{host: "evil.example"}, "Host"},
		{&headerSetter{headers: map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}}, "origin"},
	} {
		c := client[*item](t, srv.URL, httpstore.WithHTTPClient(&http.Client{Transport: tc.rt}))
		_, err := c.Create(t.Context(), "new", &item{N: 2})
		require.ErrorIs(t, err, httpstore.ErrForbidden)
		require.False(t, errors.Is(err, store.ErrUnavailable), "a refusal is not an unknown outcome: %v", err)
		require.Contains(t, err.Error(), tc.cause)
	}
	unchangedStore(t, m)
}

func TestTheClientSaysJSONOnEveryPost(t *testing.T) {
	m := store.NewMemory[*item]()
	t.Cleanup(func() { _ = m.Close() })
	srv := serve[*item](t, m)
	rt := &headerSetter{}
	c := client[*item](t, srv.URL, httpstore.WithHTTPClient(&http.Client{Transport: rt}))
	ctx := t.Context()
	obj, err := c.Create(ctx, "k", &item{N: 1})
	require.NoError(t, err)
	obj, err = c.Update(ctx, "k", &item{N: 2}, obj.Revision)
	require.NoError(t, err)
	w, err := c.Watch(ctx, "", 0)
	require.NoError(t, err)
	require.NoError(t, w.(store.ProgressRequester).RequestProgress(ctx))
	for ev := range w.Events() {
		if ev.Type == store.Progress {
			break
		}
	}
	w.Stop()
	_, err = c.Delete(ctx, "k", obj.Revision)
	require.NoError(t, err)
	rt.mu.Lock()
	defer rt.mu.Unlock()
	require.Equal(t, []string{
		"/v1/create application/json", "/v1/update application/json",
		"/v1/progress application/json", "/v1/delete application/json",
	}, rt.post)
}

func TestConfiguredHostsAndTrustedOriginsAreServed(t *testing.T) {
	m := store.NewMemory[*item]()
	t.Cleanup(func() { _ = m.Close() })
	srv := serve[*item](t, m, httpstore.WithAllowedHosts("Store.Example"), httpstore.WithTrustedOrigins("https://console.example:8443"))
	for i, f := range []forgery{
		{name: "a listed host", host: "store.example:7007"},
		{name: "a listed host, fully qualified", host: "STORE.EXAMPLE."},
		{name: "a page of a trusted origin", headers: map[string]string{"Origin": "https://console.example:8443", "Sec-Fetch-Site": "cross-site"}},
		{name: "a page of the same origin", headers: map[string]string{"Origin": srv.URL, "Sec-Fetch-Site": "same-origin"}},
	} {
		req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/v1/create?key=k%d", srv.URL, i), strings.NewReader(`{"n":1}`))
		require.NoError(t, err)
		forge(req, f, false)
		req.Header.Set("Content-Type", "application/json")
		status, code := do(t, req)
		require.Equal(t, http.StatusCreated, status, "%s: %s", f.name, code)
	}

	anyHost := serve[*item](t, m, httpstore.WithAllowedHosts("*"))
	req, err := http.NewRequest(http.MethodGet, anyHost.URL+"/v1/revision", nil)
	require.NoError(t, err)
	req.Host = "anything.example"
	status, _ := do(t, req)
	require.Equal(t, http.StatusOK, status, `WithAllowedHosts("*") serves every name`)
}
