package httpstore_test

import (
	"net/http/httptest"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
	"github.com/converge-go/converge/store/httpstore/httpstoretest"
	"github.com/converge-go/converge/store/storetest"
)

// serve serves s with a handler made with opts on a new httptest server,
// closed at cleanup.
func serve[T any](t *testing.T, s store.Store[T], opts ...httpstore.HandlerOption) *httptest.Server {
	t.Helper()
	return httpstoretest.Serve(t, s, httpstoretest.Options{Handler: opts}).Server
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

func TestClientPassesConformanceOverMemory(t *testing.T) {
	storetest.RunWith(t, func(t *testing.T) store.Store[*storetest.Value] {
		m := store.NewMemory[*storetest.Value]()
		t.Cleanup(func() { _ = m.Close() })
		return httpstoretest.Serve[*storetest.Value](t, m, httpstoretest.Options{})
	}, storetest.Options{RecordsCauses: true})
}
