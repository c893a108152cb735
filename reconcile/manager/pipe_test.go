package manager_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/manager"
)

// pipeNet is an in-memory network for one HTTP server: every dial makes a
// net.Pipe whose other end the server accepts. It needs no socket, so
// client and server run inside a synctest bubble, on its fake clock.
type pipeNet struct {
	conns     chan net.Conn
	closed    chan struct{}
	closeOnce sync.Once
}

func newPipeNet() *pipeNet {
	return &pipeNet{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (p *pipeNet) Accept() (net.Conn, error) {
	select {
	case c := <-p.conns:
		return c, nil
	case <-p.closed:
		return nil, net.ErrClosed
	}
}

func (p *pipeNet) Close() error {
	p.closeOnce.Do(func() { close(p.closed) })
	return nil
}

func (p *pipeNet) Addr() net.Addr { return pipeAddr{} }

// dial connects to the server, whatever the address.
func (p *pipeNet) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case p.conns <- server:
		return client, nil
	case <-p.closed:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// pipeServer is a manager serving on a pipeNet, and a client of it.
type pipeServer struct {
	m      *manager.Manager
	net    *pipeNet
	client *http.Client
	stop   func() error // stops the manager and returns what Run returned
}

// servePipe builds a manager whose server has opts (and a pipeNet as its
// listener), mounts handlers (pattern to handler), adds rs, and runs it
// until the test ends. Call it inside a synctest bubble.
func servePipe(t *testing.T, mopts manager.Options, opts manager.ServerOptions, handlers map[string]http.Handler, rs ...manager.Runnable) *pipeServer {
	t.Helper()
	pn := newPipeNet()
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
	s := &pipeServer{m: m, net: pn, client: &http.Client{Transport: &http.Transport{DialContext: pn.dial}}}
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
