package httpstore_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/httpstore/httpstoretest"
	"github.com/stretchr/testify/require"
)

// TestAControllerOverAClientOfAServedLayerGetsTheLayersWrites: a
// controller whose store is a Client of a served layer writes through
// reconcile.Request.Store, which finds the layer's writes on the client: a
// status write keeps the spec it did not send, and removing the finalizer
// of a marked object deletes it on the server.
func TestAControllerOverAClientOfAServedLayerGetsTheLayersWrites(t *testing.T) {
	ctx := t.Context()
	m := store.NewMemory[widget]()
	t.Cleanup(func() { _ = m.Close() })
	c := httpstoretest.ServeLayer[widget](t, m, widgetKind{}, httpstoretest.Options{})
	rec := reconcile.ReconcilerFunc[widget](func(ctx context.Context, req reconcile.Request[widget]) (reconcile.Result, error) {
		v := req.Object.Value
		switch {
		case req.Deleted:
			return reconcile.Result{}, nil
		case req.Deleting:
			v.Finalizers = slices.DeleteFunc(slices.Clone(v.Finalizers), func(f string) bool { return f == "cleanup" })
			_, err := req.Store.Update(ctx, req.Key, v, req.Object.Revision)
			return reconcile.Result{}, err
		}
		sw, ok := req.Store.(apistore.StatusWriter[widget])
		if !ok {
			return reconcile.Result{}, reconcile.Terminal(errors.New("the request's store writes no status alone"))
		}
		v.Spec = widgetSpec{} // not sent as the spec: a status write ignores it
		v.Status = widgetStatus{Ready: true, Observed: v.Generation}
		_, err := sw.UpdateStatus(ctx, req.Key, v, req.Object.Revision)
		return reconcile.Result{}, err
	})
	ctl, err := reconcile.New[widget](c, rec, reconcile.Options[widget]{Name: "widgets"})
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctl.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-done)
	})
	require.NoError(t, ctl.WaitForSync(ctx))

	obj, err := c.Create(ctx, "w", widget{Meta: apistore.Meta{Finalizers: []string{"cleanup"}}, Spec: widgetSpec{Size: 3}})
	require.NoError(t, err)
	require.NoError(t, ctl.WaitForRevision(ctx, obj.Revision))
	got, err := m.Get(ctx, "w")
	require.NoError(t, err)
	require.Equal(t, widgetSpec{Size: 3}, got.Value.Spec, "the status write kept the spec")
	require.Equal(t, widgetStatus{Ready: true, Observed: 1}, got.Value.Status)

	rev, marked, err := c.DeleteWith(ctx, "w", got.Revision, apistore.Background)
	require.NoError(t, err)
	require.True(t, marked, "an object with a finalizer is marked")
	require.NoError(t, ctl.WaitForRevision(ctx, rev))
	_, err = m.Get(ctx, "w")
	require.ErrorIs(t, err, store.ErrNotFound, "removing the last finalizer deleted the object")
}
