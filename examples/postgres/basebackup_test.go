package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// finishedBackup waits until the Backup at key has finished and returns
// its status.
func finishedBackup(t *testing.T, e *pgEnv, key string) BackupStatus {
	t.Helper()
	var st BackupStatus
	waitFor(t, key+" finished", 3*convergeLimit, func() bool {
		obj, err := e.stores.Backups.Get(t.Context(), key)
		if err == nil {
			st = obj.Value.Status
		}
		return err == nil && st.Finished()
	})
	return st
}

// requireNoScratchCluster checks that no drill left a scratch cluster's
// directory, and so no server running on one.
func requireNoScratchCluster(t *testing.T, e *pgEnv) {
	t.Helper()
	left, err := os.ReadDir(filepath.Join(e.restores, ".drills"))
	require.NoError(t, err)
	require.Empty(t, left, "a drill's scratch cluster was left behind")
}

// A base backup is counted (Succeeded) only with its drill's proof: the
// scratch cluster restored from it and the archive reached its restore
// point, and held the database's rows and checksum as recorded; the
// schedule-free Backup's status and the operator's /backups publish the
// restore point and the restore's time, and no scratch cluster is left.
func TestABaseBackupCountsOnlyOnceItsDrillRestoredItAsRecorded(t *testing.T) {
	e := newArchivedPGEnv(t)
	e.query("postgres", "CREATE DATABASE app")
	e.query("app", "CREATE TABLE t AS SELECT g AS n, md5(g::text) AS s FROM generate_series(1, 20000) g")
	op := e.startInProcess(e.daemonConfig())
	put(t, e.stores.Backups, BackupPrefix+"base-1", BackupSpec{Database: "app", Method: MethodBase})
	st := finishedBackup(t, e, BackupPrefix+"base-1")
	require.Equal(t, BackupSucceeded, st.Phase, st.Error)
	b := st.Dump.Result.Base
	require.NotNil(t, b)
	require.True(t, b.Verified)
	require.Positive(t, b.RestoreMillis)
	require.EqualValues(t, 20000, b.Rows)
	require.NotEmpty(t, b.StartWAL)
	requireNoScratchCluster(t, e)

	code, body := get(t.Context(), op.base+BackupsPath)
	require.Equal(t, http.StatusOK, code)
	var h BackupsHealth
	require.NoError(t, json.Unmarshal([]byte(body), &h))
	require.NotNil(t, h.LastVerified, body)
	require.Equal(t, BackupPrefix+"base-1", h.LastVerified.Backup)
	require.Equal(t, b.RestorePointTime.UTC(), h.LastVerified.RestorePoint.UTC())
	require.Equal(t, b.RestoreMillis, h.LastVerified.RestoreMillis)
}
