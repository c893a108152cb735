package httpstore_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
	"github.com/converge-go/converge/store/storetest"
)

// serve serves s with a handler made with opts on a new httptest server,
// closed at cleanup.
func serve[T any](t *testing.T, s store.Store[T], opts ...httpstore.HandlerOption) *httptest.Server {
	t.Helper()
	h, err := httpstore.NewHandler(s, opts...)
	if err != nil {
		t.Fatalf("NewHandler: %v", err)
	}
	srv := httptest.NewUnstartedServer(h)
	httpstore.ApplyServerDefaults(srv.Config)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// client returns a client of srv, closed at cleanup.
func client[T any](t *testing.T, url string, opts ...httpstore.ClientOption) *httpstore.Client[T] {
	t.Helper()
	c, err := httpstore.New[T](url, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// compactable is a Client whose server store is a Memory, compacted
// directly: the suite's ErrCompacted clauses run over HTTP.
type compactable struct {
	*httpstore.Client[*storetest.Value]
	m *store.Memory[*storetest.Value]
}

func (c compactable) Compact(ctx context.Context, rev int64) error { return c.m.Compact(ctx, rev) }

func TestClientPassesConformanceOverMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store[*storetest.Value] {
		m := store.NewMemory[*storetest.Value]()
		t.Cleanup(func() { _ = m.Close() })
		srv := serve[*storetest.Value](t, m)
		return compactable{client[*storetest.Value](t, srv.URL), m}
	})
}
