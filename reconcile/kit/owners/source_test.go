package owners_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/owners"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

type rsSpec struct{ Replicas int }

type rs = resource.Resource[rsSpec, struct{}]

// woken records the keys a controller reconciled.
type woken struct {
	mu   sync.Mutex
	keys []string
}

func (w *woken) Reconcile(_ context.Context, req reconcile.Request[*rs]) (reconcile.Result, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.keys = append(w.keys, req.Key)
	return reconcile.Result{}, nil
}

// take returns the keys reconciled since the last take, sorted.
func (w *woken) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	keys := w.keys
	w.keys = nil
	slices.Sort(keys)
	return keys
}

// TestTheSourceWakesTheOwnersOfEveryChildThatChanges: a controller of
// owners given a Source of their children reconciles an owner when a child
// naming it is created, updated or deleted, and both owners when a child
// moves from one to the other; a child naming no owner wakes none.
func TestTheSourceWakesTheOwnersOfEveryChildThatChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		sets := store.NewMemory[*rs]()
		defer sets.Close()
		pods := store.NewMemory[*pod]()
		defer pods.Close()
		a, err := sets.Create(ctx, "rs/a", &rs{})
		require.NoError(t, err)
		b, err := sets.Create(ctx, "rs/b", &rs{})
		require.NoError(t, err)
		rec := &woken{}
		ctrl, err := reconcile.New[*rs](sets, rec, reconcile.Options[*rs]{Name: "replicasets", Prefix: "rs/",
			Sources: []reconcile.Source{owners.Source[*pod](pods, "pods/", resource.Kind[podSpec, podStatus]{})}})
		require.NoError(t, err)
		defer runCollector(t, ctrl).stop()
		synctest.Wait()
		require.Equal(t, []string{"rs/a", "rs/b"}, rec.take(), "the initial list")

		toA := apistore.Meta{Owners: []apistore.Owner{{Key: "rs/a", UID: a.CreateRevision}}}
		p, err := pods.Create(ctx, "pods/x", &pod{Meta: toA})
		require.NoError(t, err)
		synctest.Wait()
		require.Equal(t, []string{"rs/a"}, rec.take(), "created")

		p, err = pods.Update(ctx, p.Key, &pod{Meta: toA, Status: podStatus{Running: true}}, p.Revision)
		require.NoError(t, err)
		synctest.Wait()
		require.Equal(t, []string{"rs/a"}, rec.take(), "updated")

		toB := apistore.Meta{Owners: []apistore.Owner{{Key: "rs/b", UID: b.CreateRevision}}}
		p, err = pods.Update(ctx, p.Key, &pod{Meta: toB}, p.Revision)
		require.NoError(t, err)
		synctest.Wait()
		require.Equal(t, []string{"rs/a", "rs/b"}, rec.take(), "moved from rs/a to rs/b")

		_, err = pods.Delete(ctx, p.Key, p.Revision)
		require.NoError(t, err)
		synctest.Wait()
		require.Equal(t, []string{"rs/b"}, rec.take(), "deleted")

		_, err = pods.Create(ctx, "pods/alone", &pod{})
		require.NoError(t, err)
		synctest.Wait()
		require.Empty(t, rec.take(), "a child of no one")
		require.Zero(t, ctrl.Health().Refused)
	})
}

// TestTheMapperNamesEachOwnerUnderItsPrefixOnce: Mapper returns the
// owners named before and after a change, each once, in the order named,
// only those under its prefix, and nothing for a value whose metadata
// cannot be read; a nil kind gives no mapper, and a Source that fails to
// start with an error matching store.ErrInvalid.
func TestTheMapperNamesEachOwnerUnderItsPrefixOnce(t *testing.T) {
	obj := func(raw string) *store.Object[json.RawMessage] {
		return &store.Object[json.RawMessage]{Key: "pods/x", Value: json.RawMessage(raw)}
	}
	mapper := owners.Mapper[json.RawMessage](apistore.JSONKind{}, "rs/")
	old := obj(`{"metadata":{"owners":[{"key":"rs/a","uid":1},{"key":"jobs/j","uid":2},{"key":"rs/b","uid":3}]}}`)
	cur := obj(`{"metadata":{"owners":[{"key":"rs/b","uid":3},{"key":"rs/c","uid":4}]}}`)
	require.Equal(t, []string{"rs/a", "rs/b", "rs/c"}, mapper(old, cur))
	require.Equal(t, []string{"rs/b", "rs/c"}, mapper(nil, cur))
	require.Equal(t, []string{"rs/a", "rs/b"}, mapper(old, nil))
	require.Empty(t, mapper(obj(`not json`), nil))
	require.Nil(t, owners.Mapper[json.RawMessage](nil, ""))
	err := owners.Source[json.RawMessage](store.NewMemory[json.RawMessage](), "", nil).Start(t.Context(), func(string) {})
	require.ErrorIs(t, err, store.ErrInvalid)
}
