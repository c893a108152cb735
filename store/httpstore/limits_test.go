package httpstore_test

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
	"github.com/stretchr/testify/require"
)

func TestMalformedRequestsGetAJSON4xxAndWriteNothing(t *testing.T) {
	m, url := guarded(t)
	for _, tc := range []struct {
		name, method, target, body string
		status                     int
	}{
		{"malformed JSON", "POST", "/v1/create?key=a", `{"n":`, 400},
		{"JSON of another type", "POST", "/v1/create?key=a", `{"n":"one"}`, 400},
		{"empty body", "POST", "/v1/create?key=a", ``, 400},
		{"null value", "POST", "/v1/create?key=a", `null`, 400},
		{"invalid UTF-8 in the value", "POST", "/v1/create?key=a", "{\"s\":\"\xff\"}", 400},
		{"missing key", "POST", "/v1/create", `{"n":1}`, 400},
		{"empty key", "POST", "/v1/create?key=", `{"n":1}`, 400},
		{"repeated key", "POST", "/v1/create?key=a&key=b", `{"n":1}`, 400},
		{"unknown parameter", "POST", "/v1/create?key=a&revison=1", `{"n":1}`, 400},
		{"malformed escape", "POST", "/v1/create?key=a%zz", `{"n":1}`, 400},
		{"semicolon separator", "POST", "/v1/create?key=a;key=b", `{"n":1}`, 400},
		{"missing revision", "POST", "/v1/update?key=seed", `{"n":1}`, 400},
		{"revision not a number", "POST", "/v1/update?key=seed&revision=1x", `{"n":1}`, 400},
		{"negative revision", "POST", "/v1/delete?key=seed&revision=-1", ``, 400},
		{"malformed guard", "POST", "/v1/create?key=a&guard=seed", `{"n":1}`, 400},
		{"guard of unknown kind", "POST", "/v1/create?key=a&guard=other:1:seed", `{"n":1}`, 400},
		{"guard revision not a number", "POST", "/v1/create?key=a&guard=mod:x:seed", `{"n":1}`, 400},
		{"body on delete", "POST", "/v1/delete?key=seed&revision=1", `{"n":1}`, 400},
		{"write by GET", "GET", "/v1/create?key=a", ``, 405},
		{"read by POST", "POST", "/v1/get?key=seed", ``, 405},
		{"unknown route", "POST", "/v1/put?key=a", `{"n":1}`, 404},
		{"key in the path", "POST", "/v1/create/a", `{"n":1}`, 404},
		{"dot segments in the path", "POST", "/v1/x/../create?key=a", `{"n":1}`, 404},
		{"watch without after", "GET", "/v1/watch", ``, 400},
		{"progress without seq", "POST", "/v1/progress?watch=x", ``, 400},
		{"progress with seq 0", "POST", "/v1/progress?watch=x&seq=0", ``, 400},
	} {
		status, code := raw(t, tc.method, url+tc.target, tc.body)
		require.Equal(t, tc.status, status, tc.name)
		require.Equal(t, "invalid", code, tc.name)
	}
	unchanged(t, m)
}

func TestOversizedBodyIsRefusedWith413AndWritesNothing(t *testing.T) {
	m, url := guarded(t, httpstore.WithMaxBodyBytes(100))
	big := `{"n":1,"s":"` + strings.Repeat("x", 200) + `"}`
	status, code := raw(t, "POST", url+"/v1/create?key=a", big)
	require.Equal(t, http.StatusRequestEntityTooLarge, status)
	require.Equal(t, "invalid", code)

	c := client[*item](t, url, httpstore.WithToken(rwToken))
	_, err := c.Create(t.Context(), "a", &item{S: strings.Repeat("x", 200)})
	require.ErrorIs(t, err, store.ErrInvalid, "an oversized value through the client")
	_, err = c.Create(t.Context(), "a", &item{S: "small"})
	require.NoError(t, err, "a value under the limit")
	_, err = m.Get(t.Context(), "a")
	require.NoError(t, err)
}

func TestKeysTheStoreRefusesAreRefusedWithInvalidAndWriteNothing(t *testing.T) {
	m, url := guarded(t)
	long := strings.Repeat("k", store.MaxKeyLen+1)
	for _, target := range []string{
		"/v1/create?key=" + long,
		"/v1/create?key=%00",
		"/v1/create?key=a%00b",
		"/v1/create?key=..%2F%00",
		"/v1/create?key=%FF",
		"/v1/create?key=a&guard=mod:0:%00",
		"/v1/create?key=a&guard=mod:0:" + long,
	} {
		status, code := raw(t, "POST", url+target, `{"n":1}`)
		require.Equal(t, http.StatusBadRequest, status, target)
		require.Equal(t, "invalid", code, target)
	}
	for _, target := range []string{"/v1/get?key=%00", "/v1/get?key=%FF", "/v1/list?prefix=%00", "/v1/watch?after=0&prefix=%FF"} {
		status, code := raw(t, "GET", url+target, "")
		require.Equal(t, http.StatusBadRequest, status, target)
		require.Equal(t, "invalid", code, target)
	}
	unchanged(t, m)
}

// TestPathLikeKeysAreServedExactlyAsAsked writes keys that look like paths
// or escapes through the client and raw requests and finds exactly those
// keys in the store behind the server.
func TestPathLikeKeysAreServedExactlyAsAsked(t *testing.T) {
	m, url := guarded(t)
	c := client[*item](t, url, httpstore.WithToken(rwToken))
	keys := []string{"../x", "..", "a%2Fb", "a/b", "/abs", "x?y=z&w=1", "sp ace", "+plus", "#frag", "%00", "a\\b", "é/☃"}
	for i, k := range keys {
		obj, err := c.Create(t.Context(), k, &item{N: i})
		require.NoError(t, err, "%q", k)
		require.Equal(t, k, obj.Key)
		got, err := m.Get(t.Context(), k)
		require.NoError(t, err, "the store holds %q", k)
		require.Equal(t, i, got.Value.N)
		read, err := c.Get(t.Context(), k)
		require.NoError(t, err)
		require.Equal(t, k, read.Key)
	}
	// Raw requests: the decoded query value is the key.
	for target, key := range map[string]string{
		"/v1/create?key=..%2Fy":  "../y",
		"/v1/create?key=../z":    "../z",
		"/v1/create?key=c%252Fd": "c%2Fd",
		"/v1/create?key=e%2Ff":   "e/f",
		"/v1/create?key=g+h":     "g h",
		"/v1/create?key=%2E%2E":  "..",
	} {
		before, err := m.Revision(t.Context())
		require.NoError(t, err)
		status, _ := raw(t, "POST", url+target, `{"n":1}`)
		if key == ".." {
			require.Equal(t, http.StatusConflict, status, "%s: .. exists already", target)
			continue
		}
		require.Equal(t, http.StatusCreated, status, target)
		got, err := m.Get(t.Context(), key)
		require.NoError(t, err, "%s wrote %q", target, key)
		require.Equal(t, before+1, got.Revision, "%s wrote one key", target)
	}
}

func TestTooManyWatchesAreRefusedWithAClearError(t *testing.T) {
	_, url := guarded(t, httpstore.WithMaxWatches(1))
	c := client[*item](t, url, httpstore.WithToken(roToken))
	w, err := c.Watch(t.Context(), "", 1)
	require.NoError(t, err)
	_, err = c.Watch(t.Context(), "", 1)
	require.ErrorIs(t, err, httpstore.ErrTooManyWatches)
	require.ErrorIs(t, err, store.ErrUnavailable, "a full server is a transient condition")
	require.Contains(t, err.Error(), "limit")
	w.Stop()
	// The slot is released once the server sees the stream closed.
	deadline := time.Now().Add(10 * time.Second)
	for {
		w, err = c.Watch(t.Context(), "", 1)
		if err == nil {
			w.Stop()
			return
		}
		require.ErrorIs(t, err, httpstore.ErrTooManyWatches)
		require.True(t, time.Now().Before(deadline), "the slot was never released")
	}
}

// TestSlowHeadersAreCutOffByTheServerTimeout sends half a request line and
// nothing more: the server with the package's defaults (here with a short
// ReadHeaderTimeout) closes the connection, and nothing is written.
func TestSlowHeadersAreCutOffByTheServerTimeout(t *testing.T) {
	srv := httpstore.NewServer("127.0.0.1:0", http.NotFoundHandler())
	require.Equal(t, httpstore.ServerReadHeaderTimeout, srv.ReadHeaderTimeout)
	require.NotZero(t, srv.ReadTimeout)
	require.NotZero(t, srv.WriteTimeout)
	require.NotZero(t, srv.IdleTimeout)
	require.NotZero(t, srv.MaxHeaderBytes)

	m := store.NewMemory[*item]()
	t.Cleanup(func() { _ = m.Close() })
	h, err := httpstore.NewHandler[*item](m)
	require.NoError(t, err)
	srv = httpstore.NewServer("127.0.0.1:0", h)
	srv.ReadHeaderTimeout = 50 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	conn, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte("POST /v1/create?key=slow HTTP/1.1\r\nHost: x\r\nContent-Length: 7\r\n"))
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	// The server answers at most an error status, then closes.
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err == nil {
		resp.Body.Close()
		require.GreaterOrEqual(t, resp.StatusCode, 400)
	} else {
		var ne net.Error
		require.False(t, errorsAs(err, &ne) && ne.Timeout(), "the server kept the slow connection open: %v", err)
	}
	rev, err := m.Revision(t.Context())
	require.NoError(t, err)
	require.Zero(t, rev, "the slow request wrote nothing")
}

// TestGuardKeysWithColonsAndSlashesAreServedExactly: a guard's key is
// everything after its second colon.
func TestGuardKeysWithColonsAndSlashesAreServedExactly(t *testing.T) {
	m, url := guarded(t)
	c := client[*item](t, url, httpstore.WithToken(rwToken))
	lease, err := c.Create(t.Context(), "lease:a/../b", &item{N: 1})
	require.NoError(t, err)
	_, err = c.Create(t.Context(), "x", &item{N: 2}, store.Guard{Key: "lease:a/../b", Revision: lease.Revision + 1})
	require.ErrorIs(t, err, store.ErrGuardFailed)
	_, err = c.Create(t.Context(), "x", &item{N: 2}, store.Guard{Key: "lease:a/../b", Revision: lease.Revision})
	require.NoError(t, err)
	_, err = c.Create(t.Context(), "y", &item{N: 3}, store.Guard{Key: "lease:a/../b", Revision: lease.CreateRevision, Created: true}, store.Guard{Key: "absent:", Revision: 0})
	require.NoError(t, err)
	_, err = m.Get(t.Context(), "y")
	require.NoError(t, err)
}
