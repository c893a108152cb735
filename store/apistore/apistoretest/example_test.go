package apistoretest_test

import (
	"encoding/json"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/apistore/apistoretest"
)

// A backend's test file runs the whole suite with one call; each clause
// gets a fresh store from the factory, with the layer over it.
func ExampleRun() {
	_ = func(t *testing.T) {
		apistoretest.Run(t, func(t *testing.T) store.Store[json.RawMessage] {
			s := store.NewMemory[json.RawMessage]()
			t.Cleanup(func() { s.Close() })
			return s
		})
	}
}

// A served layer runs the suite through its clients: Serve puts the layer
// over the store it is given (here in process; a server would apply it
// and return its client).
func ExampleRunWith() {
	_ = func(t *testing.T, newStore func(*testing.T) store.Store[json.RawMessage]) {
		apistoretest.RunWith(t, newStore, apistoretest.Options{
			Serve: func(t *testing.T, raw store.Store[json.RawMessage], layer []apistore.Option[json.RawMessage]) apistoretest.Layer {
				s, err := apistore.New(raw, apistore.JSONKind{}, layer...)
				if err != nil {
					t.Fatal(err)
				}
				return s
			},
		})
	}
}
