package boltstore_test

import (
	"path/filepath"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/boltstore"
	"github.com/converge-go/converge/store/storetest"
)

func TestConformance(t *testing.T) {
	const watchBuffer = 256
	newStore := func(t *testing.T) store.Store[*storetest.Value] {
		path := filepath.Join(t.TempDir(), "store.db")
		s, err := boltstore.Open[*storetest.Value](path, boltstore.WithWatchBuffer(watchBuffer))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	storetest.RunWith(t, newStore, storetest.Options{SlowWatcherWrites: 3 * watchBuffer, RecordsCauses: true})
}
