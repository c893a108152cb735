package main

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/store"
)

// The extensions a Database's operator drops are those the catalog says it
// made (its mark in their comment), never those its status lists: a
// status naming plpgsql, written by a token holder, does not make the
// operator drop it.
func TestAnExtensionTheOperatorDidNotMakeIsNeverDropped(t *testing.T) {
	e := newPGEnv(t)
	e.startInProcess(e.daemonConfig())
	put(t, e.stores.Databases, "databases/d1", DatabaseSpec{Extensions: []string{"pgcrypto"}, Reclaim: Delete})
	waitConverged(t, e.stores.Databases, convergeLimit, "databases/d1")
	obj, err := e.stores.Databases.Get(t.Context(), "databases/d1")
	require.NoError(t, err)
	v := *obj.Value
	v.Status.Extensions = []string{"pgcrypto", "plpgsql"}
	v.Spec.Extensions = nil
	v.Conditions = nil
	_, err = e.stores.Databases.(interface {
		UpdateStatus(ctx context.Context, key string, value *Database, revision int64, guards ...store.Guard) (store.Object[*Database], error)
	}).UpdateStatus(t.Context(), obj.Key, &v, obj.Revision)
	require.NoError(t, err)
	put(t, e.stores.Databases, "databases/d1", DatabaseSpec{Reclaim: Delete})
	waitFor(t, "the forged status replaced", convergeLimit, func() bool {
		obj, err := e.stores.Databases.Get(t.Context(), "databases/d1")
		return err == nil && converged(t, e.stores.Databases, "databases/d1") && !slices.Contains(obj.Value.Status.Extensions, "plpgsql")
	})
	require.Equal(t, "plpgsql", e.query("d1", "SELECT string_agg(extname, ',' ORDER BY extname) FROM pg_extension"),
		"the extension the operator made is dropped, the one it did not is kept")
}
