package main

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/examples/postgres/internal/cluster"
	"github.com/converge-go/converge/reconcile/kit/external/externaltest"
	"github.com/converge-go/converge/store"
)

// finishedRestore waits until the Restore at key has finished and returns
// its status.
func finishedRestore(t *testing.T, e *pgEnv, key string) RestoreStatus {
	t.Helper()
	objs := externaltest.WaitFor(t, e.stores.Restores, key, 3*convergeLimit, key+" finished", func(objs map[string]store.Object[*Restore]) bool {
		obj, ok := objs[key]
		return ok && (obj.Value.Status.Phase == BackupSucceeded || obj.Value.Status.Phase == BackupFailed)
	})
	return objs[key].Value.Status
}

// restoredQuery runs sql in database db of the restored cluster on port.
func (e *pgEnv) restoredQuery(port int, db, sql string) string {
	e.t.Helper()
	conn, err := pgx.Connect(e.t.Context(), fmt.Sprintf("postgres://%s:%s@127.0.0.1:%d/%s?sslmode=disable", cluster.Superuser, e.pg.Password(), port, db))
	require.NoError(e.t, err)
	defer conn.Close(e.t.Context())
	var out string
	require.NoError(e.t, conn.QueryRow(e.t.Context(), sql).Scan(&out))
	return out
}

// A Restore to an instant between two transactions makes a new cluster,
// on a port and in a directory of the operator's, that holds the first
// and not the second; one to a backup's restore point holds what the
// backup recorded; once both finished, reconciling the Restores and the
// Backup again writes nothing; deleting a Restore stops its cluster and
// removes it.
func TestAPointInTimeRestoreHoldsTheTransactionBeforeItsTimeAndNotTheOneAfter(t *testing.T) {
	e := newArchivedPGEnv(t)
	e.query("postgres", "CREATE DATABASE app")
	e.query("app", "CREATE TABLE t (n int)")
	e.query("app", "INSERT INTO t SELECT generate_series(1, 100)")
	p := e.startInProcess(e.daemonConfig())
	put(t, e.stores.Backups, BackupPrefix+"base-1", BackupSpec{Database: "app", Method: MethodBase})
	st := finishedBackup(t, e, BackupPrefix+"base-1")
	require.Equal(t, BackupSucceeded, st.Phase, st.Error)

	e.query("app", "INSERT INTO t VALUES (1001)")
	at, err := time.Parse(time.RFC3339Nano, e.query("app", `SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`))
	require.NoError(t, err)
	e.query("app", "INSERT INTO t VALUES (1002)")

	put(t, e.stores.Restores, RestorePrefix+"pitr", RestoreSpec{Time: at})
	put(t, e.stores.Restores, RestorePrefix+"point", RestoreSpec{Backup: BackupPrefix + "base-1"})
	pitr := finishedRestore(t, e, RestorePrefix+"pitr")
	require.Equal(t, BackupSucceeded, pitr.Phase, pitr.Error)
	res := pitr.Run.Result
	require.Equal(t, e.restores+"/pitr/data", res.DataDir)
	require.Equal(t, "101|1001", e.restoredQuery(res.Port, "app", "SELECT count(*) || '|' || max(n) FROM t"),
		"the first transaction is restored, the second is not")

	point := finishedRestore(t, e, RestorePrefix+"point")
	require.Equal(t, BackupSucceeded, point.Phase, point.Error)
	require.Equal(t, "100", e.restoredQuery(point.Run.Result.Port, "app", "SELECT count(*) FROM t"))
	requireWritesNothing(t, e, map[string]converging{"restores": p.op.Restores, "backups": p.op.Backups})

	for _, key := range []string{RestorePrefix + "pitr", RestorePrefix + "point"} {
		externaltest.Delete(t, e.stores.Raw, key)
		externaltest.WaitGone(t, e.stores.Raw, convergeLimit, key)
	}
	_, err = os.Stat(res.DataDir)
	require.ErrorIs(t, err, os.ErrNotExist)
	_, err = pgx.Connect(t.Context(), fmt.Sprintf("postgres://x@127.0.0.1:%d/app?sslmode=disable&connect_timeout=2", res.Port))
	require.Error(t, err, "the restored cluster is stopped")
}
