package etcdstore_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/etcdstore"
	"github.com/converge-go/converge/store/httpstore"
	"github.com/converge-go/converge/store/storetest"
)

// servedEtcd is an httpstore client of an etcd store; compaction and the
// writes of several keys in one revision go to etcd directly, so the
// suite's ErrCompacted and shared-revision clauses run over HTTP.
type servedEtcd struct {
	*httpstore.Client[*storetest.Value]
	etcd *etcdstore.Store[*storetest.Value]
}

func (s servedEtcd) Compact(ctx context.Context, rev int64) error { return s.etcd.Compact(ctx, rev) }

// TestConformanceOverHTTP runs the store suite over the HTTP client of an
// etcd store served by httpstore, one embedded member for the whole run and
// a fresh prefix per sub-test.
func TestConformanceOverHTTP(t *testing.T) {
	client := newClient(t, nil, startServer(t, nil).Endpoint())
	n := 0
	newStore := func(t *testing.T) store.Store[*storetest.Value] {
		n++
		s, err := etcdstore.New[*storetest.Value](client, fmt.Sprintf("http/%d/", n))
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		h, err := httpstore.NewHandler[*storetest.Value](s)
		if err != nil {
			t.Fatalf("NewHandler: %v", err)
		}
		srv := httptest.NewUnstartedServer(h)
		httpstore.ApplyServerDefaults(srv.Config)
		srv.Start()
		t.Cleanup(srv.Close)
		c, err := httpstore.New[*storetest.Value](srv.URL)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return servedEtcd{c, s}
	}
	storetest.RunWith(t, newStore, storetest.Options{
		SlowWatcherWrites: 300,
		CreateShared: func(ctx context.Context, s store.Store[*storetest.Value], values map[string]*storetest.Value) (int64, error) {
			return createShared(ctx, client, s.(servedEtcd).etcd.Prefix(), values)
		},
	})
}
