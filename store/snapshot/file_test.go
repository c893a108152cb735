package snapshot_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/snapshot"
	"github.com/stretchr/testify/require"
)

// names returns the names of the files in dir, sorted.
func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var ns []string
	for _, e := range entries {
		ns = append(ns, e.Name())
	}
	return ns
}

// WriteFile makes a whole snapshot file of mode 0600 and nothing else; a
// store it cannot list leaves the file that was there as it was and no
// temporary file; a file a crash left half-written, whether under a
// temporary name or truncated under its own, is never taken for a
// snapshot.
func TestWriteFileLeavesThePathWholeOrAsItWas(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	path := filepath.Join(dir, "a.snap")
	m := store.NewMemory[[]byte]()
	want, _ := fill(t, m)
	info, err := snapshot.WriteFile(ctx, path, snapshot.Bytes(m))
	require.NoError(t, err)
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o600), st.Mode().Perm())
	require.Equal(t, []string{"a.snap"}, names(t, dir))
	got, objs, err := snapshot.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, info, got)
	require.Equal(t, want, objs)

	before, err := os.ReadFile(path)
	require.NoError(t, err)
	closed := store.NewMemory[[]byte]()
	require.NoError(t, closed.Close())
	_, err = snapshot.WriteFile(ctx, path, snapshot.Bytes(closed))
	require.ErrorIs(t, err, store.ErrUnavailable)
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, before, after, "a failed save changed the file")
	require.Equal(t, []string{"a.snap"}, names(t, dir), "a failed save left a file")

	_, err = snapshot.WriteFile(ctx, filepath.Join(dir, "missing", "b.snap"), snapshot.Bytes(m))
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.Equal(t, []string{"a.snap"}, names(t, dir))

	// What a crash in the middle of a WriteFile, or of a copy, leaves.
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".z.snap.123.tmp"), before[:len(before)/2], 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "z.snap"), before[:len(before)-10], 0o600))
	found, err := snapshot.Latest(dir, info.Identity)
	require.NoError(t, err)
	require.Equal(t, path, found.Path)
	require.Len(t, found.Skipped, 1)
	require.Equal(t, filepath.Join(dir, "z.snap"), found.Skipped[0].Path)
	require.ErrorIs(t, found.Skipped[0].Err, snapshot.ErrDamaged)
}

// writeSnapshots writes a snapshot of a store at revisions 1 to n into
// dir, one fake minute apart, and returns their paths, oldest first, and
// the store's identity.
func writeSnapshots(t *testing.T, dir string, n int) ([]string, string) {
	t.Helper()
	m := store.NewMemory[[]byte]()
	id, err := m.Identity(t.Context())
	require.NoError(t, err)
	var paths []string
	for i := range n {
		_, err := m.Create(t.Context(), string(rune('a'+i)), []byte("{}"))
		require.NoError(t, err)
		path := filepath.Join(dir, "s"+string(rune('0'+i))+".snap")
		_, err = snapshot.WriteFile(t.Context(), path, snapshot.Bytes(m))
		require.NoError(t, err)
		paths = append(paths, path)
		time.Sleep(time.Minute) // the bubble's fake clock
	}
	return paths, id
}

// damage truncates the file at path by one byte.
func damage(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data[:len(data)-1], 0o600))
}

// Latest returns the good snapshot of the highest revision, and names every damaged file it passed over, ignoring files that are no
// snapshot files; a directory without a good snapshot is ErrNoSnapshot,
// one that does not exist fs.ErrNotExist.
func TestLatestReturnsTheNewestGoodSnapshotAndNamesTheDamagedOnes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		paths, id := writeSnapshots(t, dir, 4)
		// Names that sort against the revisions: the headers decide.
		require.NoError(t, os.Rename(paths[3], filepath.Join(dir, "0-newest.snap")))
		paths[3] = filepath.Join(dir, "0-newest.snap")
		require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a snapshot"), 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "junk.snap"), []byte("junk"), 0o600))

		found, err := snapshot.Latest(dir, id)
		require.NoError(t, err)
		require.Equal(t, paths[3], found.Path)
		require.Equal(t, int64(4), found.Info.Revision)
		require.Equal(t, 4, found.Info.Count)
		require.Len(t, found.Skipped, 1)
		require.Equal(t, filepath.Join(dir, "junk.snap"), found.Skipped[0].Path)

		damage(t, paths[3])
		damage(t, paths[2])
		found, err = snapshot.Latest(dir, id)
		require.NoError(t, err)
		require.Equal(t, paths[1], found.Path)
		require.Equal(t, int64(2), found.Info.Revision)
		var skipped []string
		for _, s := range found.Skipped {
			require.ErrorIs(t, s.Err, snapshot.ErrDamaged)
			skipped = append(skipped, filepath.Base(s.Path))
		}
		require.Equal(t, []string{"junk.snap", "0-newest.snap", "s2.snap"}, skipped)

		damage(t, paths[1])
		damage(t, paths[0])
		found, err = snapshot.Latest(dir, id)
		require.ErrorIs(t, err, snapshot.ErrNoSnapshot)
		require.Len(t, found.Skipped, 5)
		require.Empty(t, found.Path)

		_, err = snapshot.Latest(filepath.Join(dir, "missing"), id)
		require.ErrorIs(t, err, fs.ErrNotExist)
	})
}

// Retain keeps the newest keep good snapshots and removes the older
// ones, damaged or not; a damaged snapshot newer than the kept ones stays,
// and does not count as kept, so damage never removes the last good
// snapshots. keep below 1 is store.ErrInvalid.
func TestRetainKeepsTheNewestGoodSnapshotsAndRemovesOnlyOlderOnes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		paths, id := writeSnapshots(t, dir, 6)
		damage(t, paths[5]) // the newest
		damage(t, paths[0]) // the oldest
		removed, err := snapshot.Retain(dir, id, 2)
		require.NoError(t, err)
		slices.Sort(removed)
		require.Equal(t, []string{paths[0], paths[1], paths[2]}, removed)
		require.Equal(t, []string{"s3.snap", "s4.snap", "s5.snap"}, names(t, dir))

		removed, err = snapshot.Retain(dir, id, 2)
		require.NoError(t, err)
		require.Empty(t, removed, "a second pass removes nothing")

		_, err = snapshot.Retain(dir, id, 0)
		require.ErrorIs(t, err, store.ErrInvalid)
		_, err = snapshot.Retain(filepath.Join(dir, "missing"), id, 1)
		require.ErrorIs(t, err, fs.ErrNotExist)
	})
}
