package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/kit/external/externaltest"
	"github.com/converge-go/converge/reconcile/kit/prune"
)

// Deletions made through the store server while the operator is down are
// only marks, held by the objects' finalizers; the operator, started
// again, carries them out: the Role's role and the Database with reclaim
// delete are dropped, the Database with reclaim retain is kept and
// released (its mark removed), and the objects then go.
func TestDeletionsMadeWhileTheOperatorIsDownAreCarriedOutWhenItRestarts(t *testing.T) {
	e := newPGEnv(t)
	op := e.startProcess()
	put(t, e.stores.Roles, "roles/gone", RoleSpec{Login: true})
	put(t, e.stores.Databases, "databases/dropme", DatabaseSpec{Reclaim: Delete})
	put(t, e.stores.Databases, "databases/keepme", DatabaseSpec{Reclaim: Retain})
	externaltest.WaitConverged(t, e.stores.Roles, convergeLimit, "roles/gone")
	externaltest.WaitConverged(t, e.stores.Databases, convergeLimit, "databases/dropme", "databases/keepme")
	require.NoError(t, op.Stop(90*time.Second))

	externaltest.Delete(t, e.stores.Roles, "roles/gone")
	externaltest.Delete(t, e.stores.Databases, "databases/dropme")
	externaltest.Delete(t, e.stores.Databases, "databases/keepme")
	for _, key := range []string{"roles/gone", "databases/dropme", "databases/keepme"} {
		obj, err := e.stores.Raw.Get(t.Context(), key)
		require.NoError(t, err, "%s stays in the store, marked, while no operator runs", key)
		require.Contains(t, string(obj.Value), `"deletion"`, key)
	}
	require.Equal(t, "1", e.query("postgres", "SELECT count(*) FROM pg_roles WHERE rolname = 'gone'"), "nothing is dropped while no operator runs")
	require.Equal(t, "2", e.query("postgres", "SELECT count(*) FROM pg_database WHERE datname IN ('dropme', 'keepme')"))

	e.startProcess()
	externaltest.WaitGone(t, e.stores.Raw, convergeLimit, "roles/gone", "databases/dropme", "databases/keepme")
	require.Equal(t, "0", e.query("postgres", "SELECT count(*) FROM pg_roles WHERE rolname = 'gone'"), "the role is dropped")
	require.Equal(t, "0", e.query("postgres", "SELECT count(*) FROM pg_database WHERE datname = 'dropme'"), "reclaim delete: dropped")
	require.Equal(t, "1", e.query("postgres", "SELECT count(*) FROM pg_database WHERE datname = 'keepme'"), "reclaim retain: kept")
	require.Empty(t, e.query("postgres", "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = 'keepme'"),
		"reclaim retain: released, its mark removed")
}

// An operator started on a fresh store, against a server whose roles and
// databases are marked from another store, drops nothing, though its
// pruners pass over a desired set that names none of them; started on the
// store that marked them, the same pruner drops what that store no longer
// names, which shows the gate is the store's identity.
func TestAFreshStoreDropsNothingMarkedFromAnotherStore(t *testing.T) {
	e := newPGEnv(t)
	first := e.startInProcess(e.daemonConfig())
	put(t, e.stores.Roles, "roles/owner1", RoleSpec{})
	put(t, e.stores.Databases, "databases/d1", DatabaseSpec{Owner: "owner1", Reclaim: Delete})
	put(t, e.stores.Databases, "databases/d2", DatabaseSpec{Reclaim: Delete})
	externaltest.WaitConverged(t, e.stores.Roles, convergeLimit, "roles/owner1")
	externaltest.WaitConverged(t, e.stores.Databases, convergeLimit, "databases/d1", "databases/d2")
	first.stop()
	firstStore := e.store

	e.useNewStore() // a fresh store: its own identity, objects of its own
	put(t, e.stores.Roles, "roles/other", RoleSpec{})
	put(t, e.stores.Databases, "databases/other", DatabaseSpec{Reclaim: Delete})
	fresh := e.startInProcess(e.daemonConfig())
	externaltest.WaitConverged(t, e.stores.Roles, convergeLimit, "roles/other")
	externaltest.WaitConverged(t, e.stores.Databases, convergeLimit, "databases/other")
	for _, p := range []func(ctx context.Context) (prune.Pass, error){fresh.op.rolePruner.Prune, fresh.op.dbPruner.Prune} {
		pass, err := p(t.Context())
		require.NoError(t, err)
		require.Empty(t, pass.Pruned)
		require.Positive(t, pass.World.OtherStore, "the pass saw the other store's marks")
	}
	require.Equal(t, "2", e.query("postgres", "SELECT count(*) FROM pg_database WHERE datname IN ('d1', 'd2')"))
	require.Equal(t, "1", e.query("postgres", "SELECT count(*) FROM pg_roles WHERE rolname = 'owner1'"))
	fresh.stop()

	// Back on the first store, with d2 removed below the API-server layer
	// (its finalizer never ran): the pruner drops d2, and d2 alone.
	e.store = firstStore
	stores, closeStores, err := firstStore.stores()
	require.NoError(t, err)
	t.Cleanup(func() { closeStores() })
	e.stores = stores
	firstStore.removeBelowTheLayer(t, "databases/d2")
	e.startInProcess(e.daemonConfig()) // its first pass follows its first sync
	waitFor(t, "d2 pruned", convergeLimit, func() bool {
		return e.query("postgres", "SELECT count(*) FROM pg_database WHERE datname = 'd2'") == "0"
	})
	require.Equal(t, "1", e.query("postgres", "SELECT count(*) FROM pg_database WHERE datname = 'd1'"))
	require.Equal(t, "1", e.query("postgres", "SELECT count(*) FROM pg_database WHERE datname = 'other'"), "another store's database is kept")
}
