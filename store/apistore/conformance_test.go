package apistore_test

import (
	"encoding/json"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore/apistoretest"
)

// The layer keeps its contract over the in-memory store of JSON values,
// which shares the values it holds: with its mutation check on, a value
// the layer changed in place would fail the next call.
func TestConformanceOverMemory(t *testing.T) {
	apistoretest.Run(t, func(t *testing.T) store.Store[json.RawMessage] {
		s := store.NewMemory[json.RawMessage](store.WithMutationCheck(nil))
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// The layer keeps its contract over a View of a byte store, which encodes
// values as every byte backend does.
func TestConformanceOverAView(t *testing.T) {
	apistoretest.Run(t, func(t *testing.T) store.Store[json.RawMessage] {
		raw := store.NewMemory[[]byte]()
		t.Cleanup(func() { raw.Close() })
		return store.NewView[json.RawMessage](raw, nil)
	})
}
