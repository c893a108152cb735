package manager_test

import (
	"context"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/internal/pipenet"
	"github.com/converge-go/converge/reconcile/manager"
)

// pipeServer is a manager serving on a pipenet, and a client of it.
type pipeServer struct {
	m      *manager.Manager
	net    *pipenet.Listener
	client *http.Client
	stop   func() error // stops the manager and returns what Run returned
}

// servePipe builds a manager whose server has opts (and a pipenet as its
// listener), mounts handlers (pattern to handler), adds rs, and runs it
// until the test ends. Call it inside a synctest bubble.
func servePipe(t *testing.T, mopts manager.Options, opts manager.ServerOptions, handlers map[string]http.Handler, rs ...manager.Runnable) *pipeServer {
	t.Helper()
	pn := pipenet.New()
	opts.Listener = pn
	mopts.Server = &opts
	m, err := manager.New(mopts)
	require.NoError(t, err)
	for pattern, h := range handlers {
		require.NoError(t, m.Handle(pattern, h))
	}
	for _, r := range rs {
		require.NoError(t, m.Add(r))
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	s := &pipeServer{m: m, net: pn, client: pn.Client()}
	s.stop = sync.OnceValue(func() error {
		s.client.CloseIdleConnections()
		cancel()
		return <-done
	})
	t.Cleanup(func() { require.NoError(t, s.stop()) })
	return s
}

// do sends r and returns the status and body of its answer.
func (s *pipeServer) do(t *testing.T, r *http.Request) (int, string) {
	t.Helper()
	resp, err := s.client.Do(r)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// newRequest returns a request to the loopback URL target with headers,
// given as name, value, name, value... (an empty value sets none).
func newRequest(t *testing.T, method, target string, headers ...string) *http.Request {
	t.Helper()
	r, err := http.NewRequestWithContext(t.Context(), method, target, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] != "" {
			r.Header.Set(headers[i], headers[i+1])
		}
	}
	return r
}
