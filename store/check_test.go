package store_test

import (
	"context"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// plain hides every method of a store but store.Store's.
type plain[T any] struct{ store.Store[T] }

// TestCheckOfAStoreWithoutCheckerReadsTheSameConditions: store.Check over
// a store that is no store.Checker reads the key and each guarded key and
// answers as an Update would: nil, ErrConflict, ErrNotFound or
// ErrGuardFailed, writing nothing.
func TestCheckOfAStoreWithoutCheckerReadsTheSameConditions(t *testing.T) {
	ctx := t.Context()
	m := store.NewMemory[string]()
	s := plain[string]{m}
	obj, err := s.Create(ctx, "k", "v")
	require.NoError(t, err)
	lease, err := s.Create(ctx, "lease", "a")
	require.NoError(t, err)
	rev, err := s.Revision(ctx)
	require.NoError(t, err)

	require.NoError(t, store.Check(ctx, s, "k", obj.Revision,
		store.Guard{Key: "lease", Revision: lease.Revision},
		store.Guard{Key: "lease", Revision: lease.CreateRevision, Created: true},
		store.Guard{Key: "absent"}))
	require.ErrorIs(t, store.Check(ctx, s, "k", obj.Revision+5), store.ErrConflict)
	require.ErrorIs(t, store.Check(ctx, s, "missing", obj.Revision), store.ErrNotFound)
	require.ErrorIs(t, store.Check(ctx, s, "k", obj.Revision, store.Guard{Key: "lease", Revision: 99}), store.ErrGuardFailed)
	require.ErrorIs(t, store.Check(ctx, s, "k", obj.Revision, store.Guard{Key: "absent", Revision: 1, Created: true}), store.ErrGuardFailed)
	require.ErrorIs(t, store.Check(ctx, s, "", 1), store.ErrInvalid)
	require.ErrorIs(t, store.Check(ctx, s, "k", -1), store.ErrInvalid)
	var nilCtx context.Context
	require.ErrorIs(t, store.Check(nilCtx, s, "k", 1), store.ErrInvalid)
	require.ErrorIs(t, store.Check(ctx, store.Store[string](nil), "k", 1), store.ErrInvalid)
	after, err := s.Revision(ctx)
	require.NoError(t, err)
	require.Equal(t, rev, after, "checks write nothing")
}
