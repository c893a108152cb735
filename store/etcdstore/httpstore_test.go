package etcdstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/etcdstore"
	"github.com/converge-go/converge/store/httpstore/httpstoretest"
	"github.com/converge-go/converge/store/storetest"
)

// TestConformanceOverHTTP runs the store suite over the HTTP client of an
// etcd store served by httpstore, one embedded member for the whole run and
// a fresh prefix per sub-test. Compaction and the writes of several keys in
// one revision go to etcd directly.
func TestConformanceOverHTTP(t *testing.T) {
	client := newClient(t, nil, startServer(t, nil).Endpoint())
	n := 0
	newStore := func(t *testing.T) store.Store[*storetest.Value] {
		n++
		s, err := etcdstore.New[*storetest.Value](client, fmt.Sprintf("http/%d/", n))
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		return httpstoretest.Serve[*storetest.Value](t, s, httpstoretest.Options{})
	}
	storetest.RunWith(t, newStore, storetest.Options{
		SlowWatcherWrites: 300,
		CreateShared: func(ctx context.Context, s store.Store[*storetest.Value], values map[string]*storetest.Value) (int64, error) {
			prefix := s.(httpstoretest.Served[*storetest.Value]).Backend.(*etcdstore.Store[*storetest.Value]).Prefix()
			return createShared(ctx, client, prefix, values)
		},
	})
}
