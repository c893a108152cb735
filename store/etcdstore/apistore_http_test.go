package etcdstore_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/apistore/apistoretest"
	"github.com/converge-go/converge/store/etcdstore"
	"github.com/converge-go/converge/store/httpstore/httpstoretest"
)

// TestAPIStoreConformanceOverHTTP runs the API-server layer's suite
// through the HTTP-served store over etcd: the handler applies the layer
// over one embedded member with a fresh prefix per clause, and the suite
// talks to its client, as convergectl and other processes do.
func TestAPIStoreConformanceOverHTTP(t *testing.T) {
	client := newClient(t, nil, startServer(t, nil).Endpoint())
	n := 0
	apistoretest.RunWith(t, func(t *testing.T) store.Store[json.RawMessage] {
		n++
		s, err := etcdstore.New[json.RawMessage](client, fmt.Sprintf("apistore-http/%d/", n))
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		return s
	}, apistoretest.Options{Serve: func(t *testing.T, raw store.Store[json.RawMessage], layer []apistore.Option[json.RawMessage]) apistoretest.Layer {
		return httpstoretest.ServeLayer(t, raw, apistore.JSONKind{}, httpstoretest.Options{}, layer...)
	}})
}
