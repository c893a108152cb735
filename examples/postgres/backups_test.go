package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/kit/intent"
)

func newTestRunner(t *testing.T) *dumpRunner {
	return &dumpRunner{dir: t.TempDir(), started: map[string]bool{}, told: map[string]bool{}, logs: io.Discard, logger: slog.New(slog.DiscardHandler)}
}

// An attempt is found as the world left it (intent.Runs): absent before
// it started, running while a process holds it, finished as failed when
// its process ended without a result (it was killed), and finished with
// its result once it wrote one: never absent again once started, so it is
// never dumped a second time.
func TestAnAttemptIsFoundAbsentRunningOrFinishedAsItsRunSays(t *testing.T) {
	ctx := context.Background()
	d := newTestRunner(t)
	require.NoError(t, os.MkdirAll(d.runs().Dir, 0o700))
	found, err := d.find(ctx, "a1")
	require.NoError(t, err)
	require.Equal(t, intent.Absent, found.State)

	release, err := d.runs().Hold("a1")
	require.NoError(t, err)
	found, err = d.find(ctx, "a1")
	require.NoError(t, err)
	require.Equal(t, intent.Running, found.State, "attempt held")

	require.NoError(t, release()) // the process died without a result
	found, err = d.find(ctx, "a1")
	require.NoError(t, err)
	require.Equal(t, intent.Finished, found.State)
	require.False(t, found.Result.OK)
	require.Contains(t, found.Result.Error, "without a result")

	writeRunResult(t, d, "a1", `{"ok":true,"file":"/x.dump","entries":7}`)
	found, err = d.find(ctx, "a1")
	require.NoError(t, err)
	require.Equal(t, intent.Finished, found.State)
	require.Equal(t, DumpResult{OK: true, File: "/x.dump", Entries: 7}, found.Result)
}

// writeRunResult writes res as attempt id's result, as its process does.
func writeRunResult(t *testing.T, d *dumpRunner, id, res string) {
	t.Helper()
	p, err := d.runs().ResultPath(id)
	require.NoError(t, err)
	require.NoError(t, intent.WriteFile(p, []byte(res), 0o600))
}

// An attempt another operator process started is not started again: it
// is found running, and no process is started for it.
func TestAnAttemptStartedBeforeIsNotStartedAgain(t *testing.T) {
	d := newTestRunner(t)
	d.exe = filepath.Join(t.TempDir(), "never-run")
	require.NoError(t, os.MkdirAll(d.runs().Dir, 0o700))
	release, err := d.runs().Hold("a1")
	require.NoError(t, err)
	defer release()
	found, err := d.start(t.Context(), "backups/b1", "a1", BackupSpec{Database: "app"})
	require.NoError(t, err)
	require.Equal(t, intent.Running, found.State)
	require.Empty(t, d.started, "a process was started for it")
}

// A backup or restore process the operator did not start as its attempt
// runs nothing: it exits at once, leaving no file.
func TestAProcessNotStartedAsItsAttemptRunsNothing(t *testing.T) {
	dir := t.TempDir()
	var errOut strings.Builder
	require.Equal(t, 2, runDump([]string{"-id", "a1", "-database", "app", "-dir", dir}, &errOut))
	require.Contains(t, errOut.String(), "not started by the operator")
	t.Setenv(intent.ResultEnv, filepath.Join(t.TempDir(), "a1.result")) // another attempt's
	require.Equal(t, 2, runRestore([]string{"-id", "a1", "-name", "r1", "-base", "b1", "-dir", dir, "-archive", dir, "-restore-dir", dir}, &errOut))
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, left)
}

// A backup's files stay while its dump runs, and go once it has ended.
func TestABackupsFilesAreRemovedOnlyOnceItsDumpHasEnded(t *testing.T) {
	ctx := context.Background()
	d := newTestRunner(t)
	dump := filepath.Join(d.dir, "app", "a1.dump")
	require.NoError(t, os.MkdirAll(filepath.Dir(dump), 0o700))
	require.NoError(t, os.WriteFile(dump, []byte("dump"), 0o600))
	require.NoError(t, os.MkdirAll(d.runs().Dir, 0o700))
	release, err := d.runs().Hold("a1")
	require.NoError(t, err)
	rec := intent.Record[DumpResult]{ID: "a1"}
	require.ErrorIs(t, d.remove(ctx, rec), errDumpRunning)
	writeRunResult(t, d, "a1", `{"ok":true,"file":"`+dump+`"}`)
	require.NoError(t, release())
	require.NoError(t, d.remove(ctx, rec))
	left, err := os.ReadDir(d.runs().Dir)
	require.NoError(t, err)
	require.Empty(t, left, "the attempt's files stay")
	require.NoFileExists(t, dump)
	require.NoError(t, d.remove(ctx, intent.Record[DumpResult]{}), "a backup never attempted has nothing to remove")
}

// pg_restore --list's entries are its lines that are not comments.
func TestTheEntriesOfADumpAreItsListsLinesThatAreNotComments(t *testing.T) {
	list := ";\n; Archive created at 2026-12-02\n;\n3; 2615 2200 SCHEMA - public pg_database_owner\n\n215; 1259 16385 TABLE public t converge\n"
	require.Equal(t, 2, countEntries(strings.NewReader(list)))
}

// A backup's phase is its dump record's: running while pending, succeeded
// or failed (with the dump's error) once judged.
func TestABackupsPhaseIsItsDumpRecords(t *testing.T) {
	st, c := backupOutcome(BackupStatus{}, intent.Record[DumpResult]{ID: "a1"})
	require.Equal(t, BackupRunning, st.Phase)
	require.Equal(t, "Running", c.Reason)
	st, c = backupOutcome(BackupStatus{}, intent.Record[DumpResult]{ID: "a1", Done: true, Result: DumpResult{OK: true, File: "/x.dump"}})
	require.Equal(t, BackupSucceeded, st.Phase)
	require.True(t, st.Finished())
	require.Equal(t, "Converged", c.Reason)
	st, _ = backupOutcome(BackupStatus{}, intent.Record[DumpResult]{ID: "a1", Done: true, Result: DumpResult{Error: "boom"}})
	require.Equal(t, BackupFailed, st.Phase)
	require.Equal(t, "boom", st.Error)
}

// A secret file that others may read is refused, and the error does not
// show what it holds.
func TestASecretFileOthersMayReadIsRefused(t *testing.T) {
	p := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(p, []byte("s3cret\n"), 0o644))
	_, err := readSecretFile(p)
	require.ErrorIs(t, err, errSecretFile)
	require.NotContains(t, err.Error(), "s3cret")
	require.NoError(t, os.Chmod(p, 0o600))
	got, err := readSecretFile(p)
	require.NoError(t, err)
	require.Equal(t, "s3cret", got)
}

// A base backup's directory, named by its attempt's ID, goes with its
// Backup once its run has ended, whatever its result names.
func TestABaseBackupsDirectoryIsRemovedByItsIDOnceItsRunHasEnded(t *testing.T) {
	ctx := context.Background()
	d := newTestRunner(t)
	base := baseDir(d.dir, "a1")
	require.NoError(t, os.MkdirAll(filepath.Join(base, "global"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(base, "global", "pg_control"), []byte("x"), 0o600))
	require.NoError(t, os.MkdirAll(d.runs().Dir, 0o700))
	release, err := d.runs().Hold("a1")
	require.NoError(t, err)
	rec := intent.Record[DumpResult]{ID: "a1"}
	require.ErrorIs(t, d.remove(ctx, rec), errDumpRunning)
	require.DirExists(t, base)
	require.NoError(t, release())
	require.NoError(t, d.remove(ctx, rec))
	require.NoDirExists(t, base)
}
