package httpstore_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
	"github.com/converge-go/converge/store/httpstore/httpstoretest"
)

// TestAServerDeclaresItsKindsToItsClients: the kinds document given to
// the handler is what Kinds returns, as given; a server given none says
// it has none (errors.ErrUnsupported); a document that is not a JSON
// object is refused when the handler is made.
func TestAServerDeclaresItsKindsToItsClients(t *testing.T) {
	doc := `{"kinds":[{"prefix":"vms/","columns":[{"name":"READY","path":".conditions[Ready].status"}]}]}`
	s := httpstoretest.Serve[int](t, store.NewMemory[int](), httpstoretest.Options{
		Handler: []httpstore.HandlerOption{httpstore.WithKinds([]byte(doc))}})
	got, err := s.Kinds(t.Context())
	require.NoError(t, err)
	require.JSONEq(t, doc, string(got))

	none := httpstoretest.Serve[int](t, store.NewMemory[int](), httpstoretest.Options{})
	_, err = none.Kinds(t.Context())
	require.ErrorIs(t, err, errors.ErrUnsupported)
	require.ErrorIs(t, err, store.ErrInvalid)

	for _, bad := range []string{"", "[]", "null", "{", `"x"`} {
		_, err := httpstore.NewHandler[int](store.NewMemory[int](), httpstore.WithKinds([]byte(bad)))
		require.ErrorIs(t, err, httpstore.ErrInvalid, bad)
	}
}
