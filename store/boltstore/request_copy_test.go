package boltstore_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/boltstore"
)

// plain is a value without references: a Request holds its own copy.
type plain struct {
	N int    `json:"n"`
	S string `json:"s"`
}

// TestAReconcilerThatChangesItsRequestChangesNeitherTheStoreNorLaterReads:
// a reconciler that changes every field of the object it was given (key,
// revisions, and a value without references) changes neither the
// store's object nor what the controller's cache, its Lister and the
// next reconcile of the key read: each read is a copy of the object's
// fields, over a store whose values are shared (memory) as over one that
// decodes them (bolt). Values with references are shared, not copied:
// changing what they point to is the caller's error (store.Object).
func TestAReconcilerThatChangesItsRequestChangesNeitherTheStoreNorLaterReads(t *testing.T) {
	backends := map[string]func(t *testing.T) store.Store[plain]{
		"memory": func(t *testing.T) store.Store[plain] {
			m := store.NewMemory[plain]()
			t.Cleanup(func() { _ = m.Close() })
			return m
		},
		"bolt": func(t *testing.T) store.Store[plain] {
			s, err := boltstore.Open[plain](filepath.Join(t.TempDir(), "store.db"))
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			return s
		},
	}
	for name, open := range backends {
		t.Run(name, func(t *testing.T) { requestChangesStayInTheRequest(t, open(t)) })
	}
}

func requestChangesStayInTheRequest(t *testing.T, s store.Store[plain]) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	want, err := s.Create(ctx, "k", plain{N: 1, S: "as written"})
	require.NoError(t, err)
	seen := make(chan store.Object[plain], 2)
	rec := reconcile.ReconcilerFunc[plain](func(_ context.Context, req reconcile.Request[plain]) (reconcile.Result, error) {
		seen <- req.Object
		req.Object.Key = "other"
		req.Object.Value.N, req.Object.Value.S = -1, "changed by the reconciler"
		req.Object.Revision += 100
		req.Object.CreateRevision = 0
		return reconcile.Result{}, nil
	})
	c, err := reconcile.New[plain](s, rec, reconcile.Options[plain]{Name: "copies"})
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	defer func() { stop(); require.NoError(t, <-done) }()

	require.Equal(t, want, <-seen, "first reconcile")
	require.NoError(t, c.WaitForRevision(ctx, want.Revision))
	got, err := s.Get(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, want, got, "the store's object")
	cached, ok := c.Lister().Get("k")
	require.True(t, ok)
	require.Equal(t, want, cached, "the cache's object")
	require.Equal(t, []store.Object[plain]{want}, c.Lister().List(), "the cache's list")
	require.NoError(t, c.Enqueue("k"))
	require.Equal(t, want, <-seen, "the next reconcile")
}
