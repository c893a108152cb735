package owners_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/httpstore"
)

// pipeNet is an in-memory network for one HTTP server: every dial makes a
// net.Pipe whose other end the server accepts. It needs no socket, so a
// client and its server run inside a synctest bubble.
type pipeNet struct {
	conns     chan net.Conn
	closed    chan struct{}
	closeOnce sync.Once
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

// served returns a client of s served over HTTP on a pipeNet; the server
// and the client's connections are closed at t's cleanup.
func served(t *testing.T, s store.Store[json.RawMessage]) *httpstore.Client[json.RawMessage] {
	t.Helper()
	h, err := httpstore.NewHandler(s)
	require.NoError(t, err)
	pn := &pipeNet{conns: make(chan net.Conn), closed: make(chan struct{})}
	srv := &http.Server{Handler: h}
	httpstore.ApplyServerDefaults(srv)
	go func() { _ = srv.Serve(pn) }()
	hc := &http.Client{Transport: &http.Transport{DialContext: pn.dial}}
	c, err := httpstore.New[json.RawMessage]("http://pipe.localhost", httpstore.WithHTTPClient(hc))
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = c.Close()
		hc.CloseIdleConnections()
		_ = srv.Close()
	})
	return c
}

var _ apistore.PropagatingDeleter = (*httpstore.Client[json.RawMessage])(nil)
