package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/kit/external/externaltest"
)

// killPoint is a moment of a backup or a restore at which the operator
// is killed, found by what the run has left on disk.
type killPoint struct {
	what string
	now  func(e *pgEnv) bool
}

// nonEmpty reports whether a file matching pattern exists.
func nonEmpty(pattern string) bool {
	m, _ := filepath.Glob(pattern)
	return len(m) > 0
}

// The operator, a process of its own, is SIGKILLed while pg_basebackup
// runs, while the restore drill's scratch cluster runs and while a
// Restore's cluster is being restored, and started again each time: the
// next one adopts the run, which ends once; every backup is verified only
// after its drill ended (never while its scratch cluster exists), each
// attempt made one base backup (one pg_basebackup session), no scratch
// cluster is left on disk or running, and the Restore serves its data.
func TestSIGKILLDuringABaseBackupADrillOrARestoreLeavesNothingHalfCounted(t *testing.T) {
	e := newArchivedPGEnv(t)
	e.query("postgres", "CREATE DATABASE bigdb")
	e.query("bigdb", "CREATE TABLE t AS SELECT g AS n, md5(g::text) AS s FROM generate_series(1, 300000) g")
	op := e.startProcess()
	backups := filepath.Join(e.dir, "backups")
	points := []killPoint{
		{"pg_basebackup runs", func(e *pgEnv) bool { return nonEmpty(filepath.Join(backups, ".base", ".*.tmp")) }},
		{"the drill's scratch cluster runs", func(e *pgEnv) bool {
			return nonEmpty(filepath.Join(e.restores, ".drills", "*", "data", "postmaster.pid"))
		}},
	}
	var keys []string
	for _, p := range points {
		hit := false
		for i := 0; i < 5 && !hit; i++ {
			key := fmt.Sprintf("%skill-%d-%d", BackupPrefix, len(keys), i)
			keys = append(keys, key)
			put(t, e.stores.Backups, key, BackupSpec{Database: "bigdb", Method: MethodBase})
			hit = killAt(t, e, &op, p, func() bool { return backupFinished(t, e, key) })
		}
		require.True(t, hit, "the operator was never killed while %s", p.what)
	}
	st := finishedBackup(t, e, keys[len(keys)-1])
	require.Equal(t, BackupSucceeded, st.Phase, st.Error)
	put(t, e.stores.Restores, RestorePrefix+"back", RestoreSpec{Backup: keys[len(keys)-1]})
	restoring := killPoint{"a Restore's cluster is restored", func(e *pgEnv) bool { return nonEmpty(filepath.Join(e.restores, "back", "data")) }}
	require.True(t, killAt(t, e, &op, restoring, func() bool {
		obj, err := e.stores.Restores.Get(t.Context(), RestorePrefix+"back")
		return err == nil && obj.Value.Status.Phase != "" && obj.Value.Status.Phase != BackupRunning
	}), "the operator was never killed while a Restore's cluster was restored")

	for _, key := range keys {
		st := finishedBackup(t, e, key)
		require.Equal(t, BackupSucceeded, st.Phase, "%s: %s", key, st.Error)
		require.Equal(t, 1, st.Dump.Attempt, key)
		require.True(t, st.Dump.Result.Base.Verified, key)
		require.EqualValues(t, 300000, st.Dump.Result.Base.Rows, key)
	}
	restored := finishedRestore(t, e, RestorePrefix+"back")
	require.Equal(t, BackupSucceeded, restored.Phase, restored.Error)
	require.Equal(t, 1, restored.Run.Attempt)
	require.Equal(t, "300000", e.restoredQuery(restored.Run.Result.Port, "bigdb", "SELECT count(*) FROM t"))
	requireNoScratchCluster(t, e)
	require.Empty(t, serversOn(t, filepath.Join(e.restores, ".drills")), "a scratch cluster still runs")
	checkBaseBackupSessions(t, e, keys)
	logs := e.operatorLogs()
	t.Logf("after restarts: %d runs adopted while running, %d judged by their result",
		strings.Count(logs, "adopting a running dump"), strings.Count(logs, "judging a dump another operator process started"))
	require.Positive(t, strings.Count(logs, "adopting a running dump"), "no run was adopted: the test proved nothing")
}

// killAt watches until p holds, then kills the operator and starts it
// again, and reports true; it reports false if done holds first. Meanwhile
// no backup may be counted while a drill's scratch cluster exists.
func killAt(t *testing.T, e *pgEnv, op **operatorProc, p killPoint, done func() bool) bool {
	t.Helper()
	deadline := time.Now().Add(3 * convergeLimit)
	for time.Now().Before(deadline) {
		if p.now(e) {
			(*op).Kill()
			t.Logf("killed while %s", p.what)
			*op = e.startProcess()
			return true
		}
		if done() {
			return false
		}
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	t.Fatalf("neither %s nor its end within %v", p.what, 3*convergeLimit)
	return false
}

// backupFinished reports whether the Backup at key has finished; one
// counted while a drill's scratch cluster of its attempt exists fails t.
func backupFinished(t *testing.T, e *pgEnv, key string) bool {
	obj, err := e.stores.Backups.Get(t.Context(), key)
	if err != nil || !obj.Value.Status.Finished() {
		return false
	}
	if id := obj.Value.Status.Dump.ID; id != "" {
		require.NoDirExists(t, filepath.Join(e.restores, ".drills", id), "%s counted before its drill ended", key)
	}
	return true
}

// serversOn lists the processes whose command line names a path under
// dir: servers of clusters there.
func serversOn(t *testing.T, dir string) []string {
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	require.NoError(t, err)
	var out []string
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), dir) {
			out = append(out, strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

// checkBaseBackupSessions reads PostgreSQL's log: each backup's attempt
// opened exactly one replication session (pg_basebackup's, its
// application_name the attempt's ID).
func checkBaseBackupSessions(t *testing.T, e *pgEnv, keys []string) {
	b, err := os.ReadFile(e.pg.LogFile())
	require.NoError(t, err)
	for _, key := range keys {
		obj, err := e.stores.Backups.Get(t.Context(), key)
		require.NoError(t, err)
		id := obj.Value.Status.Dump.ID
		n := strings.Count(string(b), "replication connection authorized: user="+"converge application_name="+id+"\n")
		require.Equal(t, 1, n, "pg_basebackup sessions of %s (%s)", key, id)
	}
}

// A backup's own process SIGKILLed while its drill's scratch cluster runs
// takes that cluster with it (it dies with its parent), and the backup is
// judged Failed, never verified; deleting it removes what the drill left.
func TestABackupWhoseProcessIsKilledDuringItsDrillIsNeverVerified(t *testing.T) {
	e := newArchivedPGEnv(t)
	e.query("postgres", "CREATE DATABASE bigdb")
	e.query("bigdb", "CREATE TABLE t AS SELECT g AS n, md5(g::text) AS s FROM generate_series(1, 300000) g")
	e.startInProcess(e.daemonConfig())
	key := BackupPrefix + "killed"
	put(t, e.stores.Backups, key, BackupSpec{Database: "bigdb", Method: MethodBase})
	drills := filepath.Join(e.restores, ".drills")
	waitFor(t, "the drill's scratch cluster running", 3*convergeLimit, func() bool {
		return nonEmpty(filepath.Join(drills, "*", "data", "postmaster.pid"))
	})
	shims := processesWith(t, dumpCommand)
	require.Len(t, shims, 1)
	require.NoError(t, syscall.Kill(shims[0], syscall.SIGKILL))
	st := finishedBackup(t, e, key)
	require.Equal(t, BackupFailed, st.Phase)
	require.Contains(t, st.Error, "without a result")
	waitFor(t, "no scratch cluster running", convergeLimit, func() bool { return len(serversOn(t, drills)) == 0 })
	externaltest.Delete(t, e.stores.Raw, key)
	externaltest.WaitGone(t, e.stores.Raw, convergeLimit, key)
	requireNoScratchCluster(t, e)
}

// processesWith returns the pids of this test's children whose command
// line holds arg.
func processesWith(t *testing.T, arg string) []int {
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	require.NoError(t, err)
	var out []int
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !slices.Contains(strings.Split(string(b), "\x00"), arg) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err == nil && parentOf(pid) == os.Getpid() {
			out = append(out, pid)
		}
	}
	return out
}

// parentOf reads a process's parent from /proc.
func parentOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	var state string
	var ppid int
	fmt.Sscan(rest, &state, &ppid)
	return ppid
}
