package httpstore_test

import (
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/reconcile/manager"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
	"github.com/stretchr/testify/require"
)

// prefixes finds the package (and operation) prefixes of a message.
var prefixes = regexp.MustCompile(`\b(httpstore|store|bearer|manager|watch): `)

// requireEachPrefixOnce checks that err's message names each package at
// most once: no "httpstore: httpstore:", no "unexpected response" twice.
func requireEachPrefixOnce(t *testing.T, what string, err error) {
	t.Helper()
	require.Error(t, err, what)
	msg := err.Error()
	seen := map[string]int{}
	for _, m := range prefixes.FindAllStringSubmatch(msg, -1) {
		seen[m[1]]++
	}
	for p, n := range seen {
		require.Equal(t, 1, n, "%s: %q names %q %d times", what, msg, p+":", n)
	}
	require.LessOrEqual(t, strings.Count(msg, "unexpected response"), 1, "%s: %q", what, msg)
}

// fronts answer every request as something that is not a store server
// would, or as a server whose answers go wrong.
var fronts = map[string]http.HandlerFunc{
	"a wrong URL": http.NotFound,
	"a proxy's HTML page": func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, "<html><body><h1>502 Bad Gateway</h1></body></html>")
	},
	"a proxy's refusal": func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "proxy: forbidden", http.StatusForbidden)
	},
	"a truncated body": func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, `{"key":"k","value":{"n":`)
	},
	"a body cut short": func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "100")
		io.WriteString(w, `{"key":"k",`)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	},
	"a dropped connection": func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) },
	"an unknown error code": func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusTeapot)
		io.WriteString(w, `{"error":{"code":"teapot","message":"httpstore: brewing"}}`)
	},
	"another key's object": func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, `{"key":"other","value":{"n":1},"revision":2,"createRevision":2}`)
	},
	"a value that does not decode": func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/list" {
			io.WriteString(w, `{"objects":[{"key":"k","value":"text","revision":2}],"revision":2}`)
			return
		}
		io.WriteString(w, `{"key":"k","value":"text","revision":2,"createRevision":2}`)
	},
}

// TestClientErrorsNameEachPackageOnce: every call's error, whatever went
// wrong (a wrong URL, a proxy's page or refusal, a truncated or cut body,
// a dropped or refused connection, an unknown error code, a wrong answer,
// the store's and a manager's refusals), names each package once.
func TestClientErrorsNameEachPackageOnce(t *testing.T) {
	for name, h := range fronts {
		srv := httptest.NewServer(h)
		failed := 0
		for call, err := range tryAll(t, client[*item](t, srv.URL)) {
			if err != nil { // a Delete takes any object for its revision
				failed++
				requireEachPrefixOnce(t, name+": "+call, err)
			}
		}
		require.NotZero(t, failed, name)
		srv.Close()
	}
	refused := httptest.NewServer(http.NotFoundHandler())
	refused.Close()
	for call, err := range tryAll(t, client[*item](t, refused.URL)) {
		requireEachPrefixOnce(t, "a refused connection: "+call, err)
	}
	_, url := guarded(t)
	for _, tok := range []string{"", roToken, "unknown-token-0123456789"} {
		var opts []httpstore.ClientOption
		if tok != "" {
			opts = append(opts, httpstore.WithToken(tok))
		}
		for call, err := range tryAll(t, client[*item](t, url, opts...)) {
			if err != nil {
				requireEachPrefixOnce(t, "the store's refusal: "+call, err)
			}
		}
	}
	_, addr := manageStore(t, manager.ServerOptions{Tokens: []string{rwToken}})
	for call, err := range tryAll(t, client[*item](t, "http://"+addr+"/store")) {
		requireEachPrefixOnce(t, "a manager's refusal: "+call, err)
	}
}

// streams answer a watch with frames, then hold the stream open (or end
// it, for "a stream that breaks").
var streams = map[string][]string{
	"no start frame":                  {`{"type":"ping"}`},
	"a second start frame":            {startFrame, startFrame},
	"a frame without an object":       {startFrame, `{"type":"created"}`},
	"a value that does not decode":    {startFrame, `{"type":"created","object":{"key":"k","value":"text","revision":2}}`},
	"an end frame with unknown code":  {startFrame, `{"type":"end","error":{"code":"teapot","message":"httpstore: brewing"}}`},
	"an end frame after a stream":     {startFrame, `{"type":"end"}`},
	"a stream that breaks":            {startFrame},
	"a progress request to a proxy":   {startFrame},
	"an HTML page instead of a frame": {`<html><body>Sign in</body></html>`},
}

const startFrame = `{"type":"start","watch":"w1","heartbeatMillis":1000}`

// streaming serves frames as a watch stream; a progress request gets a
// proxy's page.
func streaming(frames []string, hold bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/watch" {
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, "<html>502 Bad Gateway</html>")
			return
		}
		for _, f := range frames {
			io.WriteString(w, f+"\n")
		}
		w.(http.Flusher).Flush()
		if hold {
			<-r.Context().Done()
		}
	}
}

// TestWatchErrorsNameEachPackageOnce: a watch that fails to open or ends
// on a bad stream (no start frame, a second one, a frame without an
// object or with a value that does not decode, an end frame, a stream
// that breaks until no stream works, a progress request a proxy refuses)
// says so naming each package once.
func TestWatchErrorsNameEachPackageOnce(t *testing.T) {
	for name, frames := range streams {
		synctest.Test(t, func(t *testing.T) {
			c := servePipe(t, streaming(frames, name != "a stream that breaks"))
			w, err := c.Watch(t.Context(), "", 0)
			if err != nil {
				requireEachPrefixOnce(t, name, err)
				return
			}
			defer w.Stop()
			if name == "a progress request to a proxy" {
				require.NoError(t, w.(store.ProgressRequester).RequestProgress(t.Context()))
			}
			for range w.Events() {
			}
			requireEachPrefixOnce(t, name, w.Err())
		})
	}
}

// TestALostAnswerWrapsTheTransportError: a call that got no answer
// matches store.ErrUnavailable and wraps what the transport said, so that
// errors.As finds the *net.OpError of a refused connection and the
// *tls.CertificateVerificationError of a server the client does not trust.
func TestALostAnswerWrapsTheTransportError(t *testing.T) {
	refused := httptest.NewServer(http.NotFoundHandler())
	refused.Close()
	_, err := client[*item](t, refused.URL).Create(t.Context(), "k", &item{N: 1})
	require.ErrorIs(t, err, store.ErrUnavailable)
	var opErr *net.OpError
	require.True(t, errors.As(err, &opErr), "%v", err)
	require.Equal(t, "dial", opErr.Op)

	untrusted := httptest.NewUnstartedServer(http.NotFoundHandler())
	untrusted.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake
	untrusted.StartTLS()
	t.Cleanup(untrusted.Close)
	_, err = client[*item](t, untrusted.URL, httpstore.WithTLSConfig(&tls.Config{})).Get(t.Context(), "k")
	require.ErrorIs(t, err, store.ErrUnavailable)
	var verr *tls.CertificateVerificationError
	require.True(t, errors.As(err, &verr), "%v", err)
}

// TestAWatchOfAStreamThatOnlySendsBadFramesEnds: a server that answers
// every stream with a frame the client cannot take does not keep the
// watch retrying for ever: it ends within a watch timeout, unavailable.
func TestAWatchOfAStreamThatOnlySendsBadFramesEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := servePipe(t, streaming(streams["a frame without an object"], true))
		w, err := c.Watch(t.Context(), "", 0)
		require.NoError(t, err)
		defer w.Stop()
		start := time.Now()
		for range w.Events() {
		}
		require.ErrorIs(t, w.Err(), httpstore.ErrProtocol)
		require.ErrorIs(t, w.Err(), store.ErrUnavailable)
		require.LessOrEqual(t, time.Since(start), 2*time.Second, "the watch timeout is two heartbeats of 1 s")
	})
}
