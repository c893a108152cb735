package intent_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/kit/intent"
	"github.com/converge-go/converge/store"
)

// entries lists dir's file names.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

// TestWriteFileReplacesThePathWholeWithItsMode: WriteFile creates the
// file with its mode exactly, replaces it whole, and leaves no temporary
// file behind.
func TestWriteFileReplacesThePathWholeWithItsMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "backup.sql")
	require.NoError(t, intent.WriteFile(path, []byte("first"), 0o640))
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o640), st.Mode().Perm())
	require.NoError(t, intent.WriteFile(path, []byte("second, longer"), 0o600))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "second, longer", string(b))
	require.Equal(t, []string{"backup.sql"}, entries(t, dir))
}

// TestAFileBecomesItsPathOnlyAtCommit: while a File is written, by Write
// or by another program through TempName, the path keeps its old content;
// Commit makes the new content the path's; a File closed uncommitted
// leaves the path as it was and no temporary file. Use after the end is
// an error, Close after Commit is nothing.
func TestAFileBecomesItsPathOnlyAtCommit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "dump")
	require.NoError(t, intent.WriteFile(path, []byte("old"), 0o600))

	f, err := intent.CreateFile(path, 0o600)
	require.NoError(t, err)
	_, err = f.Write([]byte("new "))
	require.NoError(t, err)
	require.Equal(t, filepath.Dir(path), filepath.Dir(f.TempName()))
	appendTo(t, f.TempName(), "content") // as pg_dump -f would
	b, _ := os.ReadFile(path)
	require.Equal(t, "old", string(b), "the path changed before Commit")
	require.NoError(t, f.Commit())
	b, _ = os.ReadFile(path)
	require.Equal(t, "new content", string(b))
	require.ErrorIs(t, f.Commit(), fs.ErrClosed)
	_, err = f.Write([]byte("late"))
	require.ErrorIs(t, err, fs.ErrClosed)
	require.NoError(t, f.Close())

	f, err = intent.CreateFile(path, 0o600)
	require.NoError(t, err)
	_, err = f.Write([]byte("abandoned"))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	b, _ = os.ReadFile(path)
	require.Equal(t, "new content", string(b))
	require.Equal(t, []string{"dump"}, entries(t, dir))
	require.ErrorIs(t, f.Commit(), fs.ErrClosed)
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = fh.WriteString(s)
	require.NoError(t, err)
	require.NoError(t, fh.Close())
}

// TestRemoveLeftoversRemovesOnlyThisPathsTemporaryFiles: the temporary
// files of interrupted writes of the path go; the path, other files, and
// the temporary files of another path whose name starts with this one's
// stay.
func TestRemoveLeftoversRemovesOnlyThisPathsTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a")
	require.NoError(t, intent.WriteFile(path, []byte("x"), 0o600))
	left, err := intent.CreateFile(path, 0o600) // a write a crash interrupted
	require.NoError(t, err)
	other, err := intent.CreateFile(filepath.Join(dir, "a.b"), 0o600)
	require.NoError(t, err)
	defer other.Close()
	for _, name := range []string{".a.tmp", ".a.x1.tmp", "a.123.tmp", ".a.123.tmp.keep"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), nil, 0o600))
	}
	require.NoError(t, intent.RemoveLeftovers(path))
	_, err = os.Stat(left.TempName())
	require.ErrorIs(t, err, fs.ErrNotExist)
	want := []string{".a.123.tmp.keep", ".a.tmp", ".a.x1.tmp", filepath.Base(other.TempName()), "a", "a.123.tmp"}
	slices.Sort(want)
	require.Equal(t, want, entries(t, dir))
}

// TestCreateFileRefusesBadInputWithErrInvalid: an empty path, a directory
// path and a mode with more than permission bits are refused.
func TestCreateFileRefusesBadInputWithErrInvalid(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		path string
		perm fs.FileMode
	}{{"", 0o600}, {dir + "/", 0o600}, {filepath.Join(dir, "f"), fs.ModeDir | 0o700}} {
		_, err := intent.CreateFile(c.path, c.perm)
		require.ErrorIs(t, err, store.ErrInvalid, "%q %v", c.path, c.perm)
		require.ErrorIs(t, intent.WriteFile(c.path, nil, c.perm), store.ErrInvalid)
	}
	require.Empty(t, entries(t, dir))
}
