package httpstore_test

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/converge-go/converge/store/httpstore"
)

// pipeNet is an in-memory network for one HTTP server: every dial makes a
// net.Pipe whose other end the server accepts. It needs no socket, so
// tests can run client and server inside a synctest bubble.
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

// client returns an HTTP client whose connections go to this network.
func (p *pipeNet) client() *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: p.dial}}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// servePipe serves h on a new pipeNet and returns a client of it; the
// server and the client's connections are closed at cleanup.
func servePipe(t *testing.T, h http.Handler) *httpstore.Client[*item] {
	t.Helper()
	pn := newPipeNet()
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(pn) }()
	t.Cleanup(func() { _ = srv.Close() })
	hc := pn.client()
	t.Cleanup(hc.CloseIdleConnections)
	c, err := httpstore.New[*item]("http://pipe.localhost", httpstore.WithHTTPClient(hc))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}
