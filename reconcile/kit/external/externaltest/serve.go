package externaltest

import (
	"testing"

	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/httpstore/httpstoretest"
)

// Serve starts a store server for resources of Spec and Status (an
// in-memory store with the API-server layer, served over HTTP as
// store/cmd/convergestore serves one) and returns a client of it, the
// store an operator under test runs on. Both are closed at t's cleanup.
func Serve[Spec, Status any](t testing.TB) httpstoretest.Served[*resource.Resource[Spec, Status]] {
	t.Helper()
	m := store.NewMemory[*resource.Resource[Spec, Status]]()
	t.Cleanup(func() { _ = m.Close() })
	s, err := apistore.New(m, resource.Kind[Spec, Status]{})
	if err != nil {
		t.Fatalf("externaltest: %v", err)
	}
	return httpstoretest.Serve[*resource.Resource[Spec, Status]](t, s, httpstoretest.Options{})
}
