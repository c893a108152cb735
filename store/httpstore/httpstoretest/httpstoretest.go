// Package httpstoretest serves stores over HTTP in tests: one call starts
// an httptest server for a store's Handler and returns a Client of it, so
// that a backend's tests (storetest included) run over the HTTP gateway.
package httpstoretest

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/httpstore"
	"github.com/converge-go/converge/store/storetest"
)

// Options configure Serve.
type Options struct {
	// Handler and Client are passed to httpstore.NewHandler and
	// httpstore.New.
	Handler []httpstore.HandlerOption
	Client  []httpstore.ClientOption
}

// Served is a Client of a served store that keeps the store it serves, so
// that tests can reach behind the gateway.
type Served[T any] struct {
	*httpstore.Client[T]
	// Backend is the store the server serves.
	Backend store.Store[T]
	// Server is the test server, closed at the test's cleanup.
	Server *httptest.Server
}

var _ storetest.Compactor = Served[int]{}

// Compact compacts the backend directly (the protocol has no compaction),
// so that storetest's ErrCompacted clauses run over HTTP. It fails if the
// backend is not a storetest.Compactor.
func (s Served[T]) Compact(ctx context.Context, rev int64) error {
	c, ok := s.Backend.(storetest.Compactor)
	if !ok {
		return fmt.Errorf("httpstoretest: the backend %T cannot compact", s.Backend)
	}
	return c.Compact(ctx, rev)
}

// Serve serves s with httpstore.NewHandler on a new httptest server with
// httpstore's recommended server settings and returns a client of it. The
// server and the client's connections are closed at t's cleanup (s is
// not: it is the caller's).
func Serve[T any](t testing.TB, s store.Store[T], opts Options) Served[T] {
	t.Helper()
	h, err := httpstore.NewHandler(s, opts.Handler...)
	if err != nil {
		t.Fatalf("httpstore.NewHandler: %v", err)
	}
	srv := httptest.NewUnstartedServer(h)
	httpstore.ApplyServerDefaults(srv.Config)
	srv.Start()
	t.Cleanup(srv.Close)
	c, err := httpstore.New[T](srv.URL, opts.Client...)
	if err != nil {
		t.Fatalf("httpstore.New: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return Served[T]{Client: c, Backend: s, Server: srv}
}

// ServeLayer serves the API-server layer over raw, apistore.New(raw,
// kind, layerOpts...), as Serve serves a store, and returns a client of
// it: the client offers the layer's writes (apistore.StatusWriter,
// Replacer, PropagatingDeleter) and raw's identity, applied by the
// server, admission included. Backend is the layer. A nil raw or kind
// fails t.
func ServeLayer[T any](t testing.TB, raw store.Store[T], kind apistore.Kind[T], opts Options, layerOpts ...apistore.Option[T]) Served[T] {
	t.Helper()
	layer, err := apistore.New(raw, kind, layerOpts...)
	if err != nil {
		t.Fatalf("apistore.New: %v", err)
	}
	return Serve[T](t, layer, opts)
}
