package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/intent"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// canaryDir makes a directory outside the operator's, holding what a
// forged dump ID would name: a result naming a file, a lock, and
// that file. It returns the directory and the ID, relative to runs, that
// names its files.
func canaryDir(t *testing.T, runs string) (string, string) {
	t.Helper()
	outside := t.TempDir()
	precious := filepath.Join(outside, "precious")
	require.NoError(t, os.WriteFile(precious, []byte("keep me"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "victim.result"), []byte(`{"ok":true,"file":"`+precious+`","entries":1}`), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "victim.lock"), nil, 0o600))
	rel, err := filepath.Rel(runs, filepath.Join(outside, "victim"))
	require.NoError(t, err)
	return outside, rel
}

// requireCanaries checks that the canary directory holds its three files.
func requireCanaries(t *testing.T, outside string) {
	t.Helper()
	for _, f := range []string{"precious", "victim.result", "victim.lock"} {
		require.FileExists(t, filepath.Join(outside, f), "a file outside the operator's directory was removed")
	}
}

// backupLayer is a store of Backups with the API-server layer.
func backupLayer(t *testing.T) *apistore.Store[*Backup] {
	t.Helper()
	mem := store.NewMemory[*Backup]()
	t.Cleanup(func() { _ = mem.Close() })
	layer, err := apistore.New(mem, resource.Kind[BackupSpec, BackupStatus]{})
	require.NoError(t, err)
	return layer
}

// forgedBackup stores a Backup with its finalizer and st as its status, as
// a token holder can write it.
func forgedBackup(t *testing.T, s *apistore.Store[*Backup], key string, st BackupStatus) store.Object[*Backup] {
	t.Helper()
	b := &Backup{Spec: BackupSpec{Database: "appdb"}}
	b.Finalizers = []string{BackupFinalizer}
	obj, err := s.Create(t.Context(), key, b)
	require.NoError(t, err)
	v := *obj.Value
	v.Status = st
	obj, err = s.UpdateStatus(t.Context(), key, &v, obj.Revision)
	require.NoError(t, err)
	return obj
}

// A Backup's dump ID is recomputed from its key, incarnation, generation
// and attempt, never taken from its status: a token holder who writes a
// status whose ID leads out of the runs directory does not make the
// deletion of the Backup remove anything there, nor the files its result
// names.
func TestAForgedDumpIDNeverMakesTheOperatorRemoveFilesOutsideItsDirectory(t *testing.T) {
	d := newTestRunner(t)
	outside, forged := canaryDir(t, d.runs().Dir)
	s := backupLayer(t)
	r := &backupReconciler{dumps: d}
	key := "backups/forged"
	forgedBackup(t, s, key, BackupStatus{Phase: BackupSucceeded, Dump: intent.Record[DumpResult]{ID: forged, Generation: 1, Attempt: 1, Done: true}})
	cur, err := s.Get(t.Context(), key)
	require.NoError(t, err)
	_, err = s.Delete(t.Context(), key, cur.Revision)
	require.NoError(t, err)
	marked, err := s.Get(t.Context(), key)
	require.NoError(t, err)
	_, err = r.Reconcile(t.Context(), reconcile.Request[*Backup]{Key: key, Object: marked, Deleting: true, Store: s})
	require.NoError(t, err)
	requireCanaries(t, outside)
	_, err = s.Get(t.Context(), key)
	require.ErrorIs(t, err, store.ErrNotFound, "the Backup keeps its finalizer")
}

// A pending dump record whose ID a token holder forged is taken up under
// the ID the operator recomputes: nothing outside its directory is read
// (a result file there would be judged as the dump's) or written.
func TestAForgedPendingDumpIDIsNeitherReadNorActedOn(t *testing.T) {
	d := newTestRunner(t)
	d.exe = filepath.Join(t.TempDir(), "absent") // the dump cannot start: only what is looked at counts
	outside, forged := canaryDir(t, d.runs().Dir)
	s := backupLayer(t)
	r := &backupReconciler{dumps: d}
	key := "backups/pending"
	obj := forgedBackup(t, s, key, BackupStatus{Phase: BackupRunning, Dump: intent.Record[DumpResult]{ID: forged, Generation: 1, Attempt: 1}})
	_, err := r.Reconcile(t.Context(), reconcile.Request[*Backup]{Key: key, Object: obj, Store: s})
	require.Error(t, err, "the dump cannot start")
	got, err := s.Get(t.Context(), key)
	require.NoError(t, err)
	require.False(t, got.Value.Status.Dump.Done, "the forged ID's result file was judged as the dump's: %+v", got.Value.Status.Dump)
	requireCanaries(t, outside)
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	require.Len(t, entries, 3, "a file was written outside the operator's directory")
}

// The dump a result names is removed only where the operator puts dumps:
// DATABASE/ID.dump in its directory.
func TestOnlyADumpWhereTheOperatorPutsDumpsIsRemoved(t *testing.T) {
	d := newTestRunner(t)
	id := intent.ID("backups/b", 3, 1, 1)
	require.Equal(t, filepath.Join("app", id+".dump"), d.dumpOf(id, filepath.Join(d.dir, "app", id+".dump")))
	for _, file := range []string{
		"/etc/passwd", filepath.Join(d.dir, "..", "app", id+".dump"), filepath.Join(d.dir, id+".dump"),
		filepath.Join(d.dir, "app", "other.dump"), filepath.Join(d.dir, "a", "b", id+".dump"), filepath.Join(d.dir, "App", id+".dump"),
	} {
		require.Empty(t, d.dumpOf(id, file), file)
	}
	for _, id := range []string{"", ".", "..", "../x", "a/b", "/abs", "a\x01b"} {
		require.ErrorIs(t, checkAttemptID(id), ErrInvalidSpec, "%q", id)
	}
}
