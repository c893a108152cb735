package main

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
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

// A status forged by a token holder cannot make a database the operator's:
// an unmarked database that existed before its Database, whose status says
// a CREATE was under way (creating), is neither marked nor reported as
// created, and survives the object's deletion with reclaim delete. Only
// the intent the operator keeps in its own directory adopts an unmarked
// database (TestADatabaseLeftUnmarkedByACrashIsAdoptedOnlyByItsOwnIntent).
func TestAForgedCreatingStatusNeverMakesAnExistingDatabaseTheOperators(t *testing.T) {
	e := newPGEnv(t)
	e.query("postgres", "CREATE DATABASE victim")
	e.startInProcess(e.daemonConfig())
	const key = DatabasePrefix + "victim"
	s := e.stores.Databases
	put(t, s, key, DatabaseSpec{Reclaim: Delete})
	waitConverged(t, s, convergeLimit, key)
	var rev int64
	var err error
	for range 50 {
		if rev, err = forgeStatus(t, s, key, DatabaseStatus{Exists: true, Creating: true}); !errors.Is(err, store.ErrConflict) {
			break
		}
	}
	require.NoError(t, err)
	waitFor(t, key+" reconciled since its forged status", convergeLimit, func() bool { return reconciledSince(t, s, key, rev) })
	obj, err := s.Get(t.Context(), key)
	require.NoError(t, err)
	require.False(t, obj.Value.Status.Created, "the database that existed before is reported as the operator's: %+v", obj.Value.Status)
	require.Equal(t, "victim:", e.query("postgres", victimComment), "the database that existed before was marked")

	for range 50 {
		if rev, err = forgeStatus(t, s, key, DatabaseStatus{Exists: true, Creating: true}); !errors.Is(err, store.ErrConflict) {
			break
		}
	}
	require.NoError(t, err)
	require.NoError(t, deleteCurrent(t, s, key))
	waitFor(t, key+" gone", convergeLimit, func() bool {
		_, err := e.stores.Raw.Get(t.Context(), key)
		return errors.Is(err, store.ErrNotFound)
	})
	require.Equal(t, "victim:", e.query("postgres", victimComment), "the database that existed before was dropped or marked")
}

// victimComment shows the database victim with its comment.
const victimComment = `SELECT datname || ':' || COALESCE(shobj_description(oid, 'pg_database'), '') FROM pg_database WHERE datname = 'victim'`

// An operator stopped between CREATE DATABASE and the database's mark
// leaves it unmarked with its intent in the operator's directory: the next
// operator adopts it (marks it, reports it created, drops it with reclaim
// delete). An intent left by an earlier object of the same key (another
// create revision) adopts nothing: that database is left unmarked and
// kept. Each intent is gone once judged.
func TestADatabaseLeftUnmarkedByACrashIsAdoptedOnlyByItsOwnIntent(t *testing.T) {
	e := newPGEnv(t)
	s := e.stores.Databases
	intents := createIntents{dir: filepath.Join(e.dir, "creating")}
	for _, name := range []string{"crashed", "stale"} {
		put(t, s, DatabasePrefix+name, DatabaseSpec{Reclaim: Delete})
		obj, err := s.Get(t.Context(), DatabasePrefix+name)
		require.NoError(t, err)
		if name == "stale" {
			obj.CreateRevision-- // an earlier object's
		}
		e.query("postgres", "CREATE DATABASE "+name) // what a crash before the mark leaves
		require.NoError(t, intents.record(obj, name))
	}
	e.startInProcess(e.daemonConfig())
	waitConverged(t, s, convergeLimit, DatabasePrefix+"crashed", DatabasePrefix+"stale")
	for name, created := range map[string]bool{"crashed": true, "stale": false} {
		obj, err := s.Get(t.Context(), DatabasePrefix+name)
		require.NoError(t, err)
		require.Equal(t, created, obj.Value.Status.Created, name)
		_, err = os.Stat(filepath.Join(intents.dir, name))
		require.ErrorIs(t, err, fs.ErrNotExist, "%s's intent is kept once judged", name)
	}
	comments := `SELECT string_agg(datname || ':' || COALESCE(split_part(shobj_description(oid, 'pg_database'), ' ', 2), ''), ' ' ORDER BY datname)
		FROM pg_database WHERE datname IN ('crashed', 'stale')`
	require.Equal(t, "crashed:owner=postgres-operator.databases stale:", e.query("postgres", comments))

	deleteKey(t, e.stores.Raw, DatabasePrefix+"crashed")
	deleteKey(t, e.stores.Raw, DatabasePrefix+"stale")
	waitFor(t, "both objects gone", convergeLimit, func() bool {
		objs, _, err := e.stores.Raw.List(t.Context(), DatabasePrefix)
		return err == nil && len(objs) == 0
	})
	require.Equal(t, "stale:", e.query("postgres", comments), "the adopted database is dropped, the other kept")
}
