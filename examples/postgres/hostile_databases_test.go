package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/kit/external"
	"github.com/converge-go/converge/reconcile/kit/external/externaltest"
	"github.com/converge-go/converge/reconcile/kit/resource"
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
	externaltest.WaitConverged(t, e.stores.Databases, convergeLimit, "databases/d1")
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
	externaltest.WaitFor(t, e.stores.Databases, "databases/d1", convergeLimit, "the forged status replaced", func(objs map[string]store.Object[*Database]) bool {
		obj, ok := objs["databases/d1"]
		return ok && externaltest.Converged(obj.Value) && !slices.Contains(obj.Value.Status.Extensions, "plpgsql")
	})
	require.Equal(t, "plpgsql", e.query("d1", "SELECT string_agg(extname, ',' ORDER BY extname) FROM pg_extension"),
		"the extension the operator made is dropped, the one it did not is kept")
}

// A status forged by a token holder cannot make a database the operator's:
// an unmarked database that existed before its Database, whose status says
// a CREATE was under way (the kit's record: creating), is neither marked
// nor reported as created (Synced False, NotAdopted), and survives the
// object's deletion with reclaim delete. Only the operator's own record of
// its creates adopts an unmarked database
// (TestADatabaseLeftUnmarkedByACrashIsAdoptedOnlyByItsOwnIntent).
func TestAForgedCreatingStatusNeverMakesAnExistingDatabaseTheOperators(t *testing.T) {
	e := newPGEnv(t)
	e.query("postgres", "CREATE DATABASE victim")
	e.startInProcess(e.daemonConfig())
	const key = DatabasePrefix + "victim"
	s := e.stores.Databases
	put(t, s, key, DatabaseSpec{Reclaim: Delete})
	externaltest.WaitConverged(t, s, convergeLimit, key)
	forged := DatabaseStatus{Exists: true, Created: true, External: external.Record{Name: "victim", Creating: "forged"}}
	var rev int64
	var err error
	for range 50 {
		if rev, err = forgeStatus(t, s, key, forged); !errors.Is(err, store.ErrConflict) {
			break
		}
	}
	require.NoError(t, err)
	waitReconciledSince(t, s, key, rev)
	obj, err := s.Get(t.Context(), key)
	require.NoError(t, err)
	synced, _ := resource.FindCondition(obj.Value.Conditions, external.ConditionSynced)
	require.Equal(t, external.ReasonNotAdopted, synced.Reason, "%+v", obj.Value.Conditions)
	require.Equal(t, "victim:", e.query("postgres", victimComment), "the database that existed before was marked")

	require.NoError(t, deleteCurrent(t, s, key))
	externaltest.WaitGone(t, e.stores.Raw, convergeLimit, key)
	require.Equal(t, "victim:", e.query("postgres", victimComment), "the database that existed before was dropped or marked")
}

// victimComment shows the database victim with its comment.
const victimComment = `SELECT datname || ':' || COALESCE(shobj_description(oid, 'pg_database'), '') FROM pg_database WHERE datname = 'victim'`

// An operator stopped between CREATE DATABASE and the database's mark
// leaves it unmarked, its create recorded in status and in the operator's
// own directory (external.CreatesDir): the next operator adopts it (marks
// it, reports it created, drops it with reclaim delete). A record left by
// an earlier create of the same key (another create ID) adopts nothing:
// that database is left unmarked (NotAdopted) and kept. Each record is
// gone once judged.
func TestADatabaseLeftUnmarkedByACrashIsAdoptedOnlyByItsOwnIntent(t *testing.T) {
	e := newPGEnv(t)
	s := e.stores.Databases
	creates := external.CreatesDir(filepath.Join(e.dir, "creating"))
	for _, name := range []string{"crashed", "stale"} {
		key := DatabasePrefix + name
		put(t, s, key, DatabaseSpec{Reclaim: Delete})
		_, err := forgeStatus(t, s, key, DatabaseStatus{External: external.Record{Name: name, Creating: "c-" + name}})
		require.NoError(t, err) // what the kit writes before CREATE DATABASE
		id := "c-" + name
		if name == "stale" {
			id = "an earlier create"
		}
		require.NoError(t, creates.Begin(t.Context(), key, id))
		e.query("postgres", "CREATE DATABASE "+name) // what a crash before the mark leaves
	}
	e.startInProcess(e.daemonConfig())
	externaltest.WaitConverged(t, s, convergeLimit, DatabasePrefix+"crashed")
	externaltest.WaitFor(t, s, DatabasePrefix+"stale", convergeLimit, "stale not adopted", func(objs map[string]store.Object[*Database]) bool {
		obj, ok := objs[DatabasePrefix+"stale"]
		if !ok {
			return false
		}
		c, _ := resource.FindCondition(obj.Value.Conditions, external.ConditionSynced)
		return c.Reason == external.ReasonNotAdopted
	})
	obj, err := s.Get(t.Context(), DatabasePrefix+"crashed")
	require.NoError(t, err)
	require.True(t, obj.Value.Status.Created)
	// The kit forgets the create just after it writes the status that
	// judges it (so that a crash between keeps the record, not loses it).
	waitFor(t, "crashed's record forgotten once judged", convergeLimit, func() bool {
		held, err := creates.Holds(t.Context(), DatabasePrefix+"crashed", "c-crashed")
		require.NoError(t, err)
		return !held
	})
	comments := `SELECT string_agg(datname || ':' || COALESCE(split_part(shobj_description(oid, 'pg_database'), ' ', 2), ''), ' ' ORDER BY datname)
		FROM pg_database WHERE datname IN ('crashed', 'stale')`
	require.Equal(t, "crashed:owner=postgres-operator.databases stale:", e.query("postgres", comments))

	externaltest.Delete(t, e.stores.Raw, DatabasePrefix+"crashed")
	externaltest.Delete(t, e.stores.Raw, DatabasePrefix+"stale")
	externaltest.WaitFor(t, e.stores.Raw, DatabasePrefix, convergeLimit, "both objects gone", func(objs map[string]store.Object[json.RawMessage]) bool {
		return len(objs) == 0
	})
	require.Equal(t, "stale:", e.query("postgres", comments), "the adopted database is dropped, the other kept")
	entries, err := os.ReadDir(string(creates))
	require.NoError(t, err)
	require.Empty(t, entries, "a record is kept once its Database is gone")
}
