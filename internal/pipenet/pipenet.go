// Package pipenet is an in-memory network for tests of one HTTP server:
// every dial makes a net.Pipe whose other end the server accepts. It needs
// no socket, so a client and its server run inside a testing/synctest
// bubble, on its fake clock.
package pipenet

import (
	"context"
	"net"
	"net/http"
	"sync"
)

// Listener is the server's end of the network (a net.Listener) and the
// dialer of its clients. Its zero value is not usable: make one with New.
type Listener struct {
	conns     chan net.Conn
	closed    chan struct{}
	closeOnce sync.Once
}

// New returns a network no one has dialled yet.
func New() *Listener {
	return &Listener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

// Accept waits for a dial and returns the server's end of its pipe, or
// net.ErrClosed once the listener is closed.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close makes Accept and DialContext return net.ErrClosed; connections
// made before stay open. It is safe to call more than once.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return nil
}

// Addr returns the address "pipe" of network "pipe".
func (l *Listener) Addr() net.Addr { return addr{} }

// DialContext connects to the server, whatever network and address are
// asked for (an http.Transport's DialContext). It blocks until the server
// accepts, the listener is closed (net.ErrClosed) or ctx is done.
func (l *Listener) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Client returns an HTTP client whose connections all go to this network,
// whatever the URL's host. Close its idle connections when done.
func (l *Listener) Client() *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: l.DialContext}}
}

type addr struct{}

func (addr) Network() string { return "pipe" }
func (addr) String() string  { return "pipe" }
