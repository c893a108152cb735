package httpstore_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/httpstore"
)

type (
	roleSpec struct{ Login bool }
	dbSpec   struct{ Owner string }
	seen     struct{ Seen bool }
	role     = resource.Resource[roleSpec, seen]
	db       = resource.Resource[dbSpec, seen]
)

// marker is a controller of T that records, through the layer, that it
// saw each object.
func marker[S any](t *testing.T, v *httpstore.View[*resource.Resource[S, seen]], name, prefix string) *reconcile.Controller[*resource.Resource[S, seen]] {
	rec := reconcile.ReconcilerFunc[*resource.Resource[S, seen]](func(ctx context.Context, req reconcile.Request[*resource.Resource[S, seen]]) (reconcile.Result, error) {
		if req.Deleted {
			return reconcile.Result{}, nil
		}
		_, err := resource.WriteStatus(ctx, req.Store, req.Object, seen{Seen: true})
		return reconcile.Result{}, err
	})
	c, err := reconcile.New(v, rec, reconcile.Options[*resource.Resource[S, seen]]{Name: name, Prefix: prefix})
	require.NoError(t, err)
	return c
}

// TestControllersOfTwoKindsRunOnOneSharedClientAndOneWatch: the
// controllers of two kinds of one store server, on views of one Shared
// client, each reconcile their kind, write status through the layer
// (the spec kept), and the server serves them one watch stream.
func TestControllersOfTwoKindsRunOnOneSharedClientAndOneWatch(t *testing.T) {
	m := store.NewMemory[json.RawMessage]()
	t.Cleanup(func() { _ = m.Close() })
	layer, err := apistore.New[json.RawMessage](m, apistore.JSONKind{})
	require.NoError(t, err)
	h, err := httpstore.NewHandler[json.RawMessage](layer)
	require.NoError(t, err)
	var watches atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/watch") {
			watches.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	shared, err := httpstore.NewShared(srv.URL)
	require.NoError(t, err)
	roles, dbs := httpstore.ViewOf[*role](shared, nil), httpstore.ViewOf[*db](shared, nil)

	ctx := t.Context()
	_, err = resource.PutSpec(ctx, roles, "roles/app", roleSpec{Login: true})
	require.NoError(t, err)
	last, err := resource.PutSpec(ctx, dbs, "databases/app", dbSpec{Owner: "app"})
	require.NoError(t, err)
	rc, dc := marker(t, roles, "roles", "roles/"), marker(t, dbs, "databases", "databases/")
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { done <- rc.Run(runCtx) }()
	go func() { done <- dc.Run(runCtx) }()
	defer func() {
		stop()
		require.NoError(t, <-done)
		require.NoError(t, <-done)
	}()
	require.NoError(t, rc.WaitForRevision(ctx, last.Revision))
	require.NoError(t, dc.WaitForRevision(ctx, last.Revision))

	r, err := roles.Get(ctx, "roles/app")
	require.NoError(t, err)
	require.True(t, r.Value.Status.Seen)
	require.True(t, r.Value.Spec.Login)
	d, err := dbs.Get(ctx, "databases/app")
	require.NoError(t, err)
	require.True(t, d.Value.Status.Seen)
	require.Equal(t, "app", d.Value.Spec.Owner)
	require.EqualValues(t, 1, watches.Load(), "one watch stream for both controllers")
}
