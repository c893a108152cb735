package store_test

import (
	"context"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// requireIdentity returns s's identity, failing t on an error or an empty
// identity.
func requireIdentity(t *testing.T, s store.Identifier) string {
	t.Helper()
	id, err := s.Identity(t.Context())
	require.NoError(t, err)
	require.NotEmpty(t, id)
	return id
}

// A Memory's identity is made by NewMemory: the same from every call,
// whatever the store goes through (writes, deleting everything), and
// another for every store NewMemory makes.
func TestMemoryIdentityIsStableForTheStoresLifeAndDiffersBetweenStores(t *testing.T) {
	ctx := t.Context()
	a, b := store.NewMemory[int](), store.NewMemory[int]()
	defer a.Close()
	defer b.Close()
	first := requireIdentity(t, a)
	obj, err := a.Create(ctx, "k", 1)
	require.NoError(t, err)
	_, err = a.Delete(ctx, "k", obj.Revision)
	require.NoError(t, err)
	require.Equal(t, first, requireIdentity(t, a), "an emptied store keeps its identity")
	require.NotEqual(t, first, requireIdentity(t, b), "two stores made separately")
}

// A closed Memory refuses Identity as it refuses every call, with
// ErrUnavailable, and a cancelled context with the context's error.
func TestMemoryIdentityFailsLikeEveryCall(t *testing.T) {
	m := store.NewMemory[int]()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := m.Identity(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.NoError(t, m.Close())
	_, err = m.Identity(t.Context())
	require.ErrorIs(t, err, store.ErrUnavailable)
}

// Views of one byte store have its identity; a view of a byte store that
// has none fails with ErrInvalid.
func TestViewIdentityIsTheByteStores(t *testing.T) {
	raw := store.NewMemory[[]byte]()
	defer raw.Close()
	want := requireIdentity(t, raw)
	require.Equal(t, want, requireIdentity(t, store.NewView[int](raw, nil)))
	require.Equal(t, want, requireIdentity(t, store.NewView[string](raw, nil)))

	_, err := store.NewView[int](anonymous{raw}, nil).Identity(t.Context())
	require.ErrorIs(t, err, store.ErrInvalid)
}

// anonymous hides every method of a byte store but those of store.Store.
type anonymous struct{ store.Store[[]byte] }
