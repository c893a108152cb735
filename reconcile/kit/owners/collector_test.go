package owners_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/owners"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// TestNewCollectorRefusesWhatItCannotCollectWith: a nil store or kind, a
// store without the API-server layer (whose deletes would skip
// finalizers) and options out of range fail with an error matching
// store.ErrInvalid; the zero options are valid.
func TestNewCollectorRefusesWhatItCannotCollectWith(t *testing.T) {
	mem := store.NewMemory[*pod]()
	defer mem.Close()
	kind := resource.Kind[podSpec, podStatus]{}
	layer, err := apistore.New[*pod](mem, kind)
	require.NoError(t, err)
	for name, newCollector := range map[string]func() (*owners.Collector[*pod], error){
		"nil store": func() (*owners.Collector[*pod], error) {
			return owners.NewCollector[*pod](nil, kind, owners.CollectorOptions{})
		},
		"nil kind": func() (*owners.Collector[*pod], error) {
			return owners.NewCollector[*pod](layer, nil, owners.CollectorOptions{})
		},
		"no layer": func() (*owners.Collector[*pod], error) {
			return owners.NewCollector[*pod](mem, kind, owners.CollectorOptions{})
		},
		"negative workers": func() (*owners.Collector[*pod], error) {
			return owners.NewCollector[*pod](layer, kind, owners.CollectorOptions{Workers: -1})
		},
		"an invalid prefix": func() (*owners.Collector[*pod], error) {
			return owners.NewCollector[*pod](layer, kind, owners.CollectorOptions{Prefix: "\x00"})
		},
	} {
		_, err := newCollector()
		require.ErrorIs(t, err, store.ErrInvalid, name)
	}
	c, err := owners.NewCollector[*pod](layer, kind, owners.CollectorOptions{})
	require.NoError(t, err)
	require.Equal(t, owners.DefaultName, c.Name())
	require.True(t, c.NeedsLeaderElection())
	require.ErrorIs(t, c.Ready(), reconcile.ErrNotSynced)
}

// TestTheZeroCollectorFailsEveryCallWithErrInvalid: a Collector not made
// by NewCollector, or a nil one, never panics: its calls fail with an
// error matching store.ErrInvalid.
func TestTheZeroCollectorFailsEveryCallWithErrInvalid(t *testing.T) {
	for _, c := range []*owners.Collector[*pod]{{}, nil} {
		require.ErrorIs(t, c.Run(context.Background()), store.ErrInvalid)
		require.ErrorIs(t, c.Ready(), store.ErrInvalid)
		require.ErrorIs(t, c.Healthy(), store.ErrInvalid)
		require.ErrorIs(t, c.WaitForSync(context.Background()), store.ErrInvalid)
		require.Empty(t, c.Name())
		require.Zero(t, c.Health().Revision)
	}
}

// TestRunningTwiceAtOnceIsRefused: Run called while the collector runs
// returns an error matching reconcile.ErrAlreadyRunning, and the running
// one goes on.
func TestRunningTwiceAtOnceIsRefused(t *testing.T) {
	each(t, func(t *testing.T, w world) {
		r := w.start(t, owners.CollectorOptions{})
		require.NoError(t, r.WaitForSync(t.Context()))
		require.ErrorIs(t, r.Run(t.Context()), reconcile.ErrAlreadyRunning)
		w.create(t, "rs/web", nil)
		w.create(t, "pods/a", nil, w.ref(t, "rs/web", false))
		w.remove(t, "rs/web", apistore.Background)
		w.settle(t)
		require.Empty(t, w.keys(t))
	})
}
