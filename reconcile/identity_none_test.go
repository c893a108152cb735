package reconcile_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/faultstore"
)

// withoutIdentity is a store that has no identity: it hides the
// store.Identifier of the store it holds, as a user's own backend or
// wrapper would lack one.
type withoutIdentity[T any] struct{ store.Store[T] }

// Every wrapper of a store without an identity says so in a way a
// controller understands (an error matching errors.ErrUnsupported), so
// that a controller over it syncs and reconciles as over a store without
// one, instead of taking the answer for an outage and retrying forever.
func TestAControllerOverAnyWrapperOfAStoreWithoutIdentitySyncs(t *testing.T) {
	raw := func() store.Store[json.RawMessage] {
		return withoutIdentity[json.RawMessage]{store.NewMemory[json.RawMessage]()}
	}
	wrappers := map[string]func(t *testing.T) store.Store[json.RawMessage]{
		"faultstore": func(t *testing.T) store.Store[json.RawMessage] {
			s, err := faultstore.New(raw(), faultstore.Options{})
			require.NoError(t, err)
			return s
		},
		"apistore": func(t *testing.T) store.Store[json.RawMessage] {
			s, err := apistore.New(raw(), apistore.JSONKind{})
			require.NoError(t, err)
			return s
		},
		"view": func(t *testing.T) store.Store[json.RawMessage] {
			return store.NewView(withoutIdentity[[]byte]{store.NewMemory[[]byte]()}, store.JSON[json.RawMessage]{})
		},
		"apistore over faultstore": func(t *testing.T) store.Store[json.RawMessage] {
			f, err := faultstore.New(raw(), faultstore.Options{})
			require.NoError(t, err)
			s, err := apistore.New[json.RawMessage](f, apistore.JSONKind{})
			require.NoError(t, err)
			return s
		},
	}
	for name, wrap := range wrappers {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := wrap(t)
				idr, ok := s.(store.Identifier)
				require.True(t, ok, "the wrapper offers an identity")
				_, err := idr.Identity(context.Background())
				require.ErrorIs(t, err, errors.ErrUnsupported)

				obj, err := s.Create(context.Background(), "a", json.RawMessage(`{"spec":{"n":1}}`))
				require.NoError(t, err)
				reconciled := make(chan string, 1)
				rec := reconcile.ReconcilerFunc[json.RawMessage](func(_ context.Context, req reconcile.Request[json.RawMessage]) (reconcile.Result, error) {
					reconciled <- req.Key
					return reconcile.Result{}, nil
				})
				c, err := reconcile.New(s, rec, reconcile.Options[json.RawMessage]{Name: "no-identity"})
				require.NoError(t, err)
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- c.Run(ctx) }()
				require.NoError(t, c.WaitForSync(ctx))
				require.NoError(t, c.WaitForRevision(ctx, obj.Revision))
				require.Equal(t, "a", <-reconciled)
				require.Empty(t, c.Health().Degraded)
				cancel()
				require.NoError(t, <-done)
			})
		})
	}
}
