package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/converge-go/converge/store/snapshot"
	"github.com/stretchr/testify/require"
)

// decodeInfo decodes the line snapshot save and inspect print.
func decodeInfo(t *testing.T, line string) snapshotInfo {
	t.Helper()
	var info snapshotInfo
	require.NoError(t, json.Unmarshal([]byte(line), &info), line)
	return info
}

// TestSnapshotSaveWritesTheWholeServedStoreAndInspectChecksItOffline:
// snapshot save writes every object of the served store, at the revision
// of its list, to the file, and prints its header; snapshot inspect, with
// no server named, prints the same and "ok": true; "-" is stdout for save
// and stdin for inspect.
func TestSnapshotSaveWritesTheWholeServedStoreAndInspectChecksItOffline(t *testing.T) {
	m, url := serve(t)
	for _, k := range []string{"app/web", "app/db", "other"} {
		_, err := m.Create(t.Context(), k, value(`{"spec":{"name":"`+k+`"}}`))
		require.NoError(t, err)
	}
	want, rev, err := m.List(t.Context(), "")
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "store.snap")
	r := ctl(t, url, "", "snapshot", "save", file)
	require.Equal(t, exitOK, r.code, r.stderr)
	saved := decodeInfo(t, r.stdout)
	require.Equal(t, rev, saved.Revision)
	require.Equal(t, len(want), saved.Objects)
	require.True(t, saved.OK)
	id, err := m.Identity(t.Context())
	require.NoError(t, err)
	require.Equal(t, id, saved.Identity)

	_, objs, err := snapshot.ReadFile(file)
	require.NoError(t, err)
	require.Len(t, objs, len(want))
	for i, o := range objs {
		require.Equal(t, want[i].Key, o.Key)
		require.Equal(t, string(want[i].Value), string(o.Value))
		require.Equal(t, want[i].Revision, o.Revision)
	}

	t.Setenv("CONVERGE_SERVER", "")
	r = runIn(t, t.Context(), strings.NewReader(""), "snapshot", "inspect", file)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, saved, decodeInfo(t, r.stdout))

	r = ctl(t, url, "", "snapshot", "save", "-")
	require.Equal(t, exitOK, r.code, r.stderr)
	r = runIn(t, t.Context(), strings.NewReader(r.stdout), "snapshot", "inspect", "-")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, rev, decodeInfo(t, r.stdout).Revision)
}

// TestSnapshotInspectOfADamagedFilePrintsItsHeaderNotOKAndFails: a
// truncated snapshot is printed as far as its header reads, with "ok":
// false, and is an error (exit 1) that says it is damaged; a failed save
// leaves no file.
func TestSnapshotInspectOfADamagedFilePrintsItsHeaderNotOKAndFails(t *testing.T) {
	m, url := serve(t)
	_, err := m.Create(t.Context(), "k", value(`{"v":1}`))
	require.NoError(t, err)
	dir := t.TempDir()
	file := filepath.Join(dir, "store.snap")
	r := ctl(t, url, "", "snapshot", "save", file)
	require.Equal(t, exitOK, r.code, r.stderr)
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, data[:len(data)-5], 0o600))

	r = ctl(t, url, "", "snapshot", "inspect", file)
	require.Equal(t, exitError, r.code)
	info := decodeInfo(t, r.stdout)
	require.False(t, info.OK)
	require.Equal(t, int64(1), info.Revision)
	require.Regexp(t, `^convergectl: [^\n]*damaged[^\n]*\n$`, r.stderr)

	r = ctl(t, url, "", "snapshot", "save", filepath.Join(dir, "missing", "s.snap"))
	require.Equal(t, exitError, r.code)
	require.Regexp(t, `^convergectl: [^\n]+\n$`, r.stderr)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)

	r = runAs(t, url, "", "snapshot", "load", file)
	require.Equal(t, exitUsage, r.code)
	require.True(t, strings.HasPrefix(r.stderr, `convergectl: snapshot: "load": want save or inspect`+"\n"), r.stderr)
}
