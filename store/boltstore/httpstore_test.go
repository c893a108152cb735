package boltstore_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/boltstore"
	"github.com/converge-go/converge/store/httpstore"
	"github.com/converge-go/converge/store/storetest"
)

// servedBolt is an httpstore client of a bolt store; compaction goes to the
// bolt store directly, so the suite's ErrCompacted clauses run over HTTP.
type servedBolt struct {
	*httpstore.Client[*storetest.Value]
	bolt *boltstore.Store[*storetest.Value]
}

func (s servedBolt) Compact(ctx context.Context, rev int64) error { return s.bolt.Compact(ctx, rev) }

// TestConformanceOverHTTP runs the store suite over the HTTP client of a
// bolt store served by httpstore.
func TestConformanceOverHTTP(t *testing.T) {
	const watchBuffer = 256
	newStore := func(t *testing.T) store.Store[*storetest.Value] {
		s, err := boltstore.Open[*storetest.Value](filepath.Join(t.TempDir(), "store.db"), boltstore.WithWatchBuffer(watchBuffer))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
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
		return servedBolt{c, s}
	}
	storetest.RunWith(t, newStore, storetest.Options{SlowWatcherWrites: 3 * watchBuffer})
}
