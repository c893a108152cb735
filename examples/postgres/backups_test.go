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
	return &dumpRunner{dir: t.TempDir(), running: map[string]bool{}, started: map[string]bool{}, told: map[string]bool{}, logs: io.Discard, logger: slog.New(slog.DiscardHandler)}
}

// An attempt is found as the world left it: absent before its process
// claimed it, running while the claim's lock is held, finished with its
// result once its result file is there, and finished as failed when its
// process ended without one (it was killed): never absent again once
// claimed, so it is never dumped a second time.
func TestAnAttemptIsFoundAbsentRunningOrFinishedAsItsFilesSay(t *testing.T) {
	ctx := context.Background()
	d := newTestRunner(t)
	found, err := d.find(ctx, "a1")
	require.NoError(t, err)
	require.Equal(t, intent.Absent, found.State)

	claim, err := claimAttempt(d.runs(), "a1")
	require.NoError(t, err)
	found, err = d.find(ctx, "a1")
	require.NoError(t, err)
	require.Equal(t, intent.Running, found.State, "claim held")

	require.NoError(t, claim.Close()) // the process died without a result
	found, err = d.find(ctx, "a1")
	require.NoError(t, err)
	require.Equal(t, intent.Finished, found.State)
	require.False(t, found.Result.OK)
	require.Contains(t, found.Result.Error, "without a result")

	require.NoError(t, intent.WriteFile(filepath.Join(d.runs(), "a1.json"), []byte(`{"ok":true,"file":"/x.dump","entries":7}`), 0o600))
	found, err = d.find(ctx, "a1")
	require.NoError(t, err)
	require.Equal(t, intent.Finished, found.State)
	require.Equal(t, DumpResult{OK: true, File: "/x.dump", Entries: 7}, found.Result)
}

// A second process of an attempt finds it claimed and runs nothing.
func TestASecondClaimOfAnAttemptFails(t *testing.T) {
	runs := t.TempDir()
	first, err := claimAttempt(runs, "a1")
	require.NoError(t, err)
	defer first.Close()
	_, err = claimAttempt(runs, "a1")
	require.ErrorIs(t, err, errClaimed)
	left, err := filepath.Glob(filepath.Join(runs, ".*"))
	require.NoError(t, err)
	require.Empty(t, left, "no temporary claim is left behind")
}

// A backup's files stay while its dump runs, and go once it has ended.
func TestABackupsFilesAreRemovedOnlyOnceItsDumpHasEnded(t *testing.T) {
	ctx := context.Background()
	d := newTestRunner(t)
	dump := filepath.Join(d.dir, "app", "a1.dump")
	require.NoError(t, os.MkdirAll(filepath.Dir(dump), 0o700))
	require.NoError(t, os.WriteFile(dump, []byte("dump"), 0o600))
	claim, err := claimAttempt(d.runs(), "a1")
	require.NoError(t, err)
	rec := intent.Record[DumpResult]{ID: "a1"}
	require.ErrorIs(t, d.remove(ctx, rec), errDumpRunning)
	require.NoError(t, intent.WriteFile(filepath.Join(d.runs(), "a1.json"), []byte(`{"ok":true,"file":"`+dump+`"}`), 0o600))
	claim.Close()
	require.NoError(t, d.remove(ctx, rec))
	for _, p := range []string{dump, filepath.Join(d.runs(), "a1.json"), filepath.Join(d.runs(), "a1.claim")} {
		require.NoFileExists(t, p)
	}
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
	claim, err := claimAttempt(d.runs(), "a1")
	require.NoError(t, err)
	rec := intent.Record[DumpResult]{ID: "a1"}
	require.ErrorIs(t, d.remove(ctx, rec), errDumpRunning)
	require.DirExists(t, base)
	claim.Close()
	require.NoError(t, d.remove(ctx, rec))
	require.NoDirExists(t, base)
}
