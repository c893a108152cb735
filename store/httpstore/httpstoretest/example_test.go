package httpstoretest_test

import (
	"fmt"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore/httpstoretest"
	"github.com/converge-go/converge/store/storetest"
)

// A backend's conformance test over the HTTP gateway: every store the
// suite asks for is served, and the suite talks to the client.
func ExampleServe() {
	conformance := func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store[*storetest.Value] {
			m := store.NewMemory[*storetest.Value]()
			t.Cleanup(func() { _ = m.Close() })
			return httpstoretest.Serve[*storetest.Value](t, m, httpstoretest.Options{})
		})
	}
	fmt.Printf("%T\n", conformance)
	// Output:
	// func(*testing.T)
}
