package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/kit/intent"
	"github.com/converge-go/converge/store"
)

// The archive and restore commands are built from the operator's own
// archive path alone, which must be clean, absolute and free of anything
// a shell or a setting reads (quotes, spaces, $, ;, %): anything else is
// refused as invalid.
func TestTheArchiveCommandIsBuiltOnlyFromACheckedPath(t *testing.T) {
	for _, bad := range []string{"", "archive", "/tmp/a b", "/tmp/a'b", "/tmp/$(id)", "/tmp/a;b", "/tmp/%f", "/tmp/../etc", "/tmp/a/", "/tmp/a\nb"} {
		_, err := newWALArchive(bad)
		require.ErrorIs(t, err, store.ErrInvalid, "%q", bad)
	}
	a, err := newWALArchive("/srv/pg-archive/main")
	require.NoError(t, err)
	for _, cmd := range []string{a.command(), a.restoreCommand()} {
		rest := strings.NewReplacer("/srv/pg-archive/main", "", "%f", "", "%p", "").Replace(cmd)
		require.NotContains(t, rest, "%", cmd)
		require.NotContains(t, rest, "'", cmd)
	}
}

// A Restore names its base backup's files and restore point by the ID
// recomputed from the Backup's key, never by what its status says; a
// status claiming a verified dump, or a base backup of another method,
// is no base backup to restore.
func TestARestoreTakesItsBaseBackupFromTheKeyNeverFromTheStatus(t *testing.T) {
	forged := &Backup{Spec: BackupSpec{Database: "app", Method: MethodBase}}
	forged.Status = BackupStatus{Phase: BackupSucceeded, Dump: intent.Record[DumpResult]{ID: "../../etc", Generation: 1, Attempt: 1, Done: true,
		Result: DumpResult{OK: true, File: "/etc", Base: &BaseResult{Verified: true, RestorePoint: "x'; DROP"}}}}
	id, ok := verifiedBase(store.Object[*Backup]{Key: BackupPrefix + "b", Value: forged, CreateRevision: 7})
	require.True(t, ok)
	require.Equal(t, intent.ID(BackupPrefix+"b", 7, 1, 1), id)
	require.NoError(t, checkAttemptID(id))

	dump := *forged
	dump.Spec.Method = MethodDump
	_, ok = verifiedBase(store.Object[*Backup]{Key: BackupPrefix + "b", Value: &dump, CreateRevision: 7})
	require.False(t, ok)
	unverified := *forged
	unverified.Status.Dump.Result.Base = &BaseResult{}
	_, ok = verifiedBase(store.Object[*Backup]{Key: BackupPrefix + "b", Value: &unverified, CreateRevision: 7})
	require.False(t, ok)
}
