package faultstore_test

import (
	"testing"
	"testing/synctest"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/faultstore"
	"github.com/stretchr/testify/require"
)

// Identity is the wrapped store's, read through the faults: a Plan sees it
// as OpIdentity, an injected error and every kind of outage fail it before
// it reaches the store, and it comes back once the outage ends.
func TestIdentityIsTheWrappedStoresAndFailsDuringAnOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		mem := store.NewMemory[int]()
		defer mem.Close()
		want, err := mem.Identity(ctx)
		require.NoError(t, err)
		var seen []faultstore.Call
		s := newStore[int](t, mem, faultstore.Options{Plan: func(c faultstore.Call) faultstore.Decision {
			seen = append(seen, c)
			if len(seen) == 2 {
				return faultstore.Decision{Fault: faultstore.Fail}
			}
			return faultstore.Decision{}
		}})
		var id store.Identifier = s
		got, err := id.Identity(ctx)
		require.NoError(t, err)
		require.Equal(t, want, got)
		_, err = s.Identity(ctx)
		require.ErrorIs(t, err, store.ErrUnavailable, "an injected error")
		require.ErrorIs(t, err, faultstore.ErrNotSent)
		require.Equal(t, []faultstore.Call{{Op: faultstore.OpIdentity}, {Op: faultstore.OpIdentity}}, seen)

		for _, o := range []faultstore.Outage{faultstore.Loud, faultstore.Silent} {
			s.SetOutage(o)
			_, err = s.Identity(ctx)
			require.ErrorIs(t, err, store.ErrUnavailable, "%v outage", o)
			require.ErrorIs(t, err, faultstore.ErrNotSent, "%v outage", o)
		}
		s.SetOutage(faultstore.Up)
		got, err = s.Identity(ctx)
		require.NoError(t, err)
		require.Equal(t, want, got, "the same identity once the outage ends")
	})
}

// A wrapped store without an identity makes Identity fail with
// store.ErrInvalid.
func TestIdentityOfAStoreWithoutOneIsInvalid(t *testing.T) {
	mem := store.NewMemory[int]()
	defer mem.Close()
	s := newStore[int](t, plainStore{mem}, faultstore.Options{})
	_, err := s.Identity(t.Context())
	require.ErrorIs(t, err, store.ErrInvalid)
}

// plainStore hides every method of a store but those of store.Store.
type plainStore struct{ store.Store[int] }
