package boltstore_test

import (
	"path/filepath"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/boltstore"
	"github.com/converge-go/converge/store/httpstore/httpstoretest"
	"github.com/converge-go/converge/store/storetest"
)

// TestConformanceOverHTTP runs the store suite over the HTTP client of a
// bolt store served by httpstore (compaction goes to the bolt store).
func TestConformanceOverHTTP(t *testing.T) {
	const watchBuffer = 256
	newStore := func(t *testing.T) store.Store[*storetest.Value] {
		s, err := boltstore.Open[*storetest.Value](filepath.Join(t.TempDir(), "store.db"), boltstore.WithWatchBuffer(watchBuffer))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return httpstoretest.Serve[*storetest.Value](t, s, httpstoretest.Options{})
	}
	storetest.RunWith(t, newStore, storetest.Options{SlowWatcherWrites: 3 * watchBuffer, RecordsCauses: true})
}
