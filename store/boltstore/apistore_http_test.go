package boltstore_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/apistore/apistoretest"
	"github.com/converge-go/converge/store/boltstore"
	"github.com/converge-go/converge/store/httpstore/httpstoretest"
)

// TestAPIStoreConformanceOverHTTP runs the API-server layer's suite
// through the HTTP-served store over bolt: the handler applies the layer
// over a fresh file per clause, and the suite talks to its client, as
// convergectl and other processes do.
func TestAPIStoreConformanceOverHTTP(t *testing.T) {
	apistoretest.RunWith(t, func(t *testing.T) store.Store[json.RawMessage] {
		s, err := boltstore.Open[json.RawMessage](filepath.Join(t.TempDir(), "store.db"))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}, apistoretest.Options{Serve: func(t *testing.T, raw store.Store[json.RawMessage], layer []apistore.Option[json.RawMessage]) apistoretest.Layer {
		return httpstoretest.ServeLayer(t, raw, apistore.JSONKind{}, httpstoretest.Options{}, layer...)
	}})
}
