package etcdstore_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore/apistoretest"
	"github.com/converge-go/converge/store/etcdstore"
)

// TestAPIStoreConformance runs the API-server layer's suite over etcd,
// with one embedded member for the whole run and a fresh prefix per
// clause.
func TestAPIStoreConformance(t *testing.T) {
	client := newClient(t, nil, startServer(t, nil).Endpoint())
	n := 0
	apistoretest.Run(t, func(t *testing.T) store.Store[json.RawMessage] {
		n++
		s, err := etcdstore.New[json.RawMessage](client, fmt.Sprintf("apistore/%d/", n))
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		return s
	})
}
