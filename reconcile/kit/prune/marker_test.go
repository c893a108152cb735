package prune_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/kit/prune"
	"github.com/converge-go/converge/store"
)

// countedStore counts its identity reads and answers the identity a test
// sets.
type countedStore struct {
	store.Store[*db]
	reads    atomic.Int64
	identity atomic.Value // string
}

func (s *countedStore) Identity(context.Context) (string, error) {
	s.reads.Add(1)
	return s.identity.Load().(string), nil
}

// TestAMarkReadsTheStoresIdentityOncePerIdentity: a thousand marks read
// the identity once; after a pass has read another identity (the store
// was replaced), marks carry the new one without another read of their
// own.
func TestAMarkReadsTheStoresIdentityOncePerIdentity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &countedStore{Store: store.NewMemory[*db]()}
		s.identity.Store("memory:FIRST")
		put(t, s, "dbs/keep")
		p := newPruner(t, &fakeController{}, s, newWorld(), prune.Options{})
		for range 1000 {
			m, err := p.Mark(t.Context())
			require.NoError(t, err)
			require.Equal(t, prune.Mark{Owner: owner, Store: "memory:FIRST"}, m)
		}
		require.EqualValues(t, 1, s.reads.Load())

		s.identity.Store("memory:SECOND")
		defer start(t, p)() // its first pass reads the identity twice
		reads := s.reads.Load()
		for range 1000 {
			m, err := p.Mark(t.Context())
			require.NoError(t, err)
			require.Equal(t, "memory:SECOND", m.Store)
		}
		require.Equal(t, reads, s.reads.Load(), "marks read nothing more")
	})
}

// TestAMarkerWithoutOwnerOrStoreIsRefused: bad input is ErrInvalid.
func TestAMarkerWithoutOwnerOrStoreIsRefused(t *testing.T) {
	_, err := prune.NewMarker("", store.NewMemory[int]())
	require.ErrorIs(t, err, prune.ErrInvalid)
	_, err = prune.NewMarker("op", nil)
	require.ErrorIs(t, err, store.ErrInvalid)
	var zero prune.Marker
	_, err = zero.Mark(t.Context())
	require.ErrorIs(t, err, prune.ErrInvalid)
}
