package manager_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/manager"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
)

// slowBody is how long a body slowPost sends, a byte a second: four times
// DefaultReadTimeout.
const slowBody = 4 * int(manager.DefaultReadTimeout/time.Second)

// slowResult is what a slowPost saw: the status of the answer (0 if none
// came) and how many bytes of its body it could send before the server
// closed the connection.
type slowResult struct {
	status int
	sent   int
}

// slowPost posts slowBody bytes to path over a new connection to s, one a
// second on the bubble's clock, with authorization auth (none if empty),
// and reports what it saw once the connection is closed.
func slowPost(t *testing.T, s *pipeServer, path, auth string) <-chan slowResult {
	conn, err := s.net.DialContext(t.Context(), "", "")
	require.NoError(t, err)
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n", path, slowBody)
	if auth != "" {
		head += "Authorization: " + auth + "\r\n"
	}
	out := make(chan slowResult, 1)
	status := make(chan int, 1)
	go func() { // reads the answer, if any, until the server closes
		code := 0
		if resp, err := http.ReadResponse(bufio.NewReader(conn), nil); err == nil {
			code = resp.StatusCode
			_, _ = io.Copy(io.Discard, resp.Body)
		}
		status <- code
		conn.Close()
	}()
	go func() {
		sent := 0
		if _, err := io.WriteString(conn, head+"\r\n"); err == nil {
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for ; sent < slowBody; sent++ {
				<-tick.C
				if _, err := conn.Write([]byte{'x'}); err != nil {
					break
				}
			}
		}
		out <- slowResult{status: <-status, sent: sent}
	}()
	return out
}

// TestTheServerCutsARequestWhoseBodyArrivesTooSlowly: with the default
// limits, a request whose body comes a byte at a time is cut off before
// its end (the handler's read fails at ReadTimeout), and one without a
// token is answered 401 without waiting for its body at all.
func TestTheServerCutsARequestWhoseBodyArrivesTooSlowly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		readErrs := make(chan error, 1)
		s := servePipe(t, manager.Options{}, manager.ServerOptions{Tokens: []string{debugToken}}, map[string]http.Handler{
			"POST /upload": http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				_, err := io.ReadAll(r.Body)
				readErrs <- err
			}),
		})
		withToken := slowPost(t, s, "/upload", "Bearer "+debugToken)
		withoutToken := slowPost(t, s, "/upload", "")

		refused := <-withoutToken
		require.Equal(t, http.StatusUnauthorized, refused.status)
		require.Less(t, refused.sent, slowBody, "the refused request's body was read to its end")

		require.ErrorIs(t, <-readErrs, os.ErrDeadlineExceeded, "the handler read a slow body to its end")
		cut := <-withToken
		require.Less(t, cut.sent, slowBody, "the connection outlived its body's read timeout")
	})
}

// TestAWatchServedThroughTheManagerOutlivesItsTimeouts: a store watch
// served by an httpstore handler mounted on the manager stays one open
// stream past ReadTimeout and WriteTimeout and delivers a change made
// then, because the handler moves its own deadlines.
func TestAWatchServedThroughTheManagerOutlivesItsTimeouts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := store.NewMemory[*item]()
		h, err := httpstore.NewHandler[*item](mem, httpstore.WithHeartbeat(500*time.Millisecond))
		require.NoError(t, err)
		s := servePipe(t, manager.Options{}, manager.ServerOptions{ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second},
			map[string]http.Handler{"/store/": http.StripPrefix("/store", h)})

		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		r, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/store/v1/watch?after=0", nil)
		require.NoError(t, err)
		resp, err := s.client.Do(r)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		frames := bufio.NewScanner(resp.Body)
		next := func() string {
			require.True(t, frames.Scan(), "the stream ended: %v", frames.Err())
			var f struct{ Type string }
			require.NoError(t, json.Unmarshal(frames.Bytes(), &f))
			return f.Type
		}
		require.Equal(t, "start", next())
		for pings := 0; pings < 20; { // 10 s of heartbeats: five times each timeout
			if next() == "ping" {
				pings++
			}
		}
		_, err = mem.Create(t.Context(), "late", &item{N: 1})
		require.NoError(t, err)
		for next() != "created" {
		}
	})
}
