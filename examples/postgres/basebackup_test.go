package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/examples/internal/procs"
	"github.com/converge-go/converge/examples/postgres/internal/cluster"
	"github.com/converge-go/converge/reconcile/kit/external/externaltest"
	"github.com/converge-go/converge/reconcile/kit/intent"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
)

// finishedBackup waits until the Backup at key has finished and returns
// its status.
func finishedBackup(t *testing.T, e *pgEnv, key string) BackupStatus {
	t.Helper()
	objs := externaltest.WaitFor(t, e.stores.Backups, key, 3*convergeLimit, key+" finished", func(objs map[string]store.Object[*Backup]) bool {
		obj, ok := objs[key]
		return ok && obj.Value.Status.Finished()
	})
	return objs[key].Value.Status
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

	code, body := procs.Get(t.Context(), op.base+BackupsPath)
	require.Equal(t, http.StatusOK, code)
	var h BackupsHealth
	require.NoError(t, json.Unmarshal([]byte(body), &h))
	require.NotNil(t, h.LastVerified, body)
	require.Equal(t, BackupPrefix+"base-1", h.LastVerified.Backup)
	require.Equal(t, b.RestorePointTime.UTC(), h.LastVerified.RestorePoint.UTC())
	require.Equal(t, b.RestoreMillis, h.LastVerified.RestoreMillis)
}

// A base backup whose WAL is missing from the archive, or damaged there,
// or whose own files are damaged, fails its drill and is never verified:
// the scratch cluster cannot reach the restore point, the backup's phase
// is Failed, and no scratch cluster is left.
func TestABaseBackupWhoseWALIsMissingOrDamagedIsNeverVerified(t *testing.T) {
	e := newArchivedPGEnv(t)
	ctx := t.Context()
	for _, kv := range e.pg.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	e.query("postgres", "CREATE DATABASE app")
	e.query("app", "CREATE TABLE t AS SELECT g AS n FROM generate_series(1, 1000) g")
	archive, err := newWALArchive(e.archive)
	require.NoError(t, err)
	conn, err := connectEnv(ctx, "postgres", 0)
	require.NoError(t, err)
	defer conn.Close(ctx)
	require.NoError(t, archive.ensure(ctx, conn))
	require.NoError(t, makeRestoreDir(e.restores, ""))
	cred, err := cluster.Credential("")
	require.NoError(t, err)
	damages := map[string]func(t *testing.T, base string, res BaseResult){
		"its first WAL segment missing": func(t *testing.T, _ string, res BaseResult) {
			require.NoError(t, os.Remove(filepath.Join(e.archive, res.StartWAL)))
		},
		"its checkpoint record damaged": func(t *testing.T, base string, res BaseResult) {
			damageAt(t, filepath.Join(e.archive, res.StartWAL), startOffset(t, base), 512)
		},
		"its restore point's record damaged": func(t *testing.T, _ string, res BaseResult) {
			// The LSN pg_create_restore_point returns is the record's end.
			seg, end := lsnPlace(t, res.RestorePointLSN)
			damageAt(t, filepath.Join(e.archive, seg), end-64, 64)
		},
		"a file of the backup damaged": func(t *testing.T, base string, _ BaseResult) {
			damageAt(t, filepath.Join(base, "global", "pg_control"), 0, 16)
		},
	}
	for what, damage := range damages {
		dir, id := t.TempDir(), "drill-"+strings.NewReplacer(" ", "-", "'", "").Replace(what)
		res, _, err := takeBaseBackup(ctx, id, "app", dir, e.pg.BinDir(), archive)
		require.NoError(t, err, what)
		damage(t, baseDir(dir, id), res)
		err = drill(ctx, baseDir(dir, id), filepath.Join(e.restores, ".drills", id), e.pg.BinDir(), "app", archive, cred, &res)
		require.Error(t, err, what)
		t.Logf("%s: %v", what, err)
		require.False(t, res.Verified, what)
		st, _ := backupOutcome(BackupStatus{}, intent.Record[DumpResult]{ID: id, Done: true,
			Result: DumpResult{Base: &res, Error: err.Error()}})
		require.Equal(t, BackupFailed, st.Phase, what)
		requireNoScratchCluster(t, e)
	}
}

// startOffset reads the offset, in its WAL segment, of a base backup's
// start (its backup_label's START WAL LOCATION).
func startOffset(t *testing.T, base string) int64 {
	b, err := os.ReadFile(filepath.Join(base, "backup_label"))
	require.NoError(t, err)
	var hi, lo uint64
	_, err = fmt.Sscanf(string(b), "START WAL LOCATION: %X/%X", &hi, &lo)
	require.NoError(t, err)
	return int64(lo % (16 << 20))
}

// lsnPlace returns the WAL segment (timeline 1) and offset of lsn.
func lsnPlace(t *testing.T, lsn string) (string, int64) {
	var hi, lo uint64
	_, err := fmt.Sscanf(lsn, "%X/%X", &hi, &lo)
	require.NoError(t, err)
	return fmt.Sprintf("%08X%08X%08X", 1, hi, lo>>24), int64(lo % (16 << 20))
}

// damageAt inverts n bytes of the file at path from offset on.
func damageAt(t *testing.T, path string, offset int64, n int) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	buf := make([]byte, n)
	_, err = f.ReadAt(buf, offset)
	require.NoError(t, err)
	for i := range buf {
		buf[i] ^= 0xFF
	}
	_, err = f.WriteAt(buf, offset)
	require.NoError(t, err)
}

// A WAL archive that fails is visible: /readyz names it with the segment
// that could not be archived, and so does the status of a base backup
// waiting for it; once archiving works again the operator is ready and
// the backup is made and verified; the archive_command it set is its own.
func TestAFailingWALArchiveIsNamedInTheOperatorsHealth(t *testing.T) {
	e := newArchivedPGEnv(t)
	op := e.startInProcess(e.daemonConfig())
	archive, err := newWALArchive(e.archive)
	require.NoError(t, err)
	// The operator sets it with ALTER SYSTEM and pg_reload_conf(), which
	// the server applies a moment later.
	waitFor(t, "the operator's archive_command", convergeLimit, func() bool {
		return e.query("postgres", "SHOW archive_command") == archive.command()
	})
	require.NoError(t, os.Chmod(e.archive, 0o500)) // the server's user can no longer write
	e.query("postgres", "CREATE TABLE w AS SELECT 1 AS n")
	e.query("postgres", "SELECT pg_switch_wal()")
	var body string
	waitFor(t, "the archive's failure in /readyz", convergeLimit, func() bool {
		var code int
		code, body = procs.Get(t.Context(), op.base+"/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "archiving WAL fails")
	})
	t.Logf("/readyz: %s", strings.TrimSpace(body))
	require.Contains(t, body, ArchiveDependencyName)
	key := BackupPrefix + "waiting"
	e.query("postgres", "CREATE DATABASE app")
	put(t, e.stores.Backups, key, BackupSpec{Database: "app", Method: MethodBase})
	externaltest.WaitFor(t, e.stores.Backups, key, convergeLimit, "the archive's failure in the backup's status", func(objs map[string]store.Object[*Backup]) bool {
		obj, found := objs[key]
		if !found {
			return false
		}
		c, ok := resource.FindCondition(obj.Value.Conditions, ConditionReady)
		return ok && strings.Contains(c.Message, "waiting for the WAL archive: archiving WAL fails")
	})
	require.NoError(t, os.Chmod(e.archive, 0o700))
	e.waitReady(op.base)
	st := finishedBackup(t, e, key)
	require.Equal(t, BackupSucceeded, st.Phase, st.Error)
}

// An operator given a WAL archive on a server whose archive_mode is off
// sets it on (ALTER SYSTEM) and names it in /readyz until PostgreSQL
// restarts; after the restart the server archives into the archive.
func TestArchiveModeOffIsSetOnAndNamedUntilPostgreSQLRestarts(t *testing.T) {
	e := withArchive(t, newPGEnv(t))
	require.Equal(t, "off", e.query("postgres", "SHOW archive_mode"))
	op := e.startInProcess(e.daemonConfig())
	waitFor(t, "archive_mode named in /readyz", convergeLimit, func() bool {
		code, body := procs.Get(t.Context(), op.base+"/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "archive_mode is off")
	})
	require.NoError(t, e.pg.Stop())
	require.NoError(t, e.pg.Start(t.Context()))
	e.waitReady(op.base)
	require.Equal(t, "on", e.query("postgres", "SHOW archive_mode"))
	e.query("postgres", "CREATE TABLE w AS SELECT 1 AS n")
	seg := e.query("postgres", "SELECT pg_walfile_name(pg_switch_wal())")
	waitFor(t, seg+" archived", convergeLimit, func() bool {
		_, err := os.Stat(filepath.Join(e.archive, seg))
		return err == nil
	})
}
