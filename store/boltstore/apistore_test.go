package boltstore_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore/apistoretest"
	"github.com/converge-go/converge/store/boltstore"
)

// TestAPIStoreConformance runs the API-server layer's suite over a bolt
// store of JSON values, a fresh file per clause.
func TestAPIStoreConformance(t *testing.T) {
	apistoretest.Run(t, func(t *testing.T) store.Store[json.RawMessage] {
		s, err := boltstore.Open[json.RawMessage](filepath.Join(t.TempDir(), "store.db"))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}
