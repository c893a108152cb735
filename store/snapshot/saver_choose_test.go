package snapshot_test

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/snapshot"
	"github.com/converge-go/converge/store/snapshot/snapshottest"
	"github.com/stretchr/testify/require"
)

// identityRevisions returns the identity and revision of every snapshot in
// dir, as "identity@revision", sorted.
func identityRevisions(t *testing.T, dir string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*"+snapshot.Ext))
	require.NoError(t, err)
	var got []string
	for _, p := range paths {
		info, err := snapshot.CheckFile(p)
		require.NoError(t, err)
		got = append(got, fmt.Sprintf("%s@%d", info.Identity, info.Revision))
	}
	slices.Sort(got)
	return got
}

// A Saver with Keep 1 keeps the snapshot it just saved, whatever the
// clocks that stamped the others: an older snapshot of its store stamped
// years ahead is removed, a snapshot of another store sharing the
// directory is never removed (whose own Saver keeps its own), and a
// snapshot of its store at a revision above the store's (another history)
// is kept and named in a warning.
func TestASaverKeepsWhatItSavesWhateverTheClocksAndTheOtherStores(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		dir := t.TempDir()
		m := store.NewMemory[[]byte]()
		id, err := m.Identity(ctx)
		require.NoError(t, err)
		for _, k := range []string{"a", "b", "c"} {
			_, err := m.Create(ctx, k, []byte("{}"))
			require.NoError(t, err)
		}
		in2030 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) // the bubble's clock says 2000
		snapshottest.WriteFile(t, filepath.Join(dir, "stale.snap"), snapshottest.Header{Identity: id, Revision: 1, Time: in2030},
			snapshottest.Object("a", "{}", 1))
		snapshottest.WriteFile(t, filepath.Join(dir, "other.snap"), snapshottest.Header{Identity: "bolt:OTHER", Revision: 1000, Time: in2030},
			snapshottest.Object("x", "{}", 1000))
		var logs lockedBuffer
		s, err := snapshot.NewSaver(snapshot.Bytes(m), snapshot.SaverOptions{Dir: dir, Every: time.Minute, Keep: 1, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		require.NoError(t, err)
		stop := run(t, s)
		synctest.Wait()
		require.Equal(t, []string{"bolt:OTHER@1000", id + "@3"}, identityRevisions(t, dir))

		// Another store saving into the same directory keeps its own.
		m2 := store.NewMemory[[]byte]()
		id2, err := m2.Identity(ctx)
		require.NoError(t, err)
		_, err = m2.Create(ctx, "z", []byte("{}"))
		require.NoError(t, err)
		s2, err := snapshot.NewSaver(snapshot.Bytes(m2), snapshot.SaverOptions{Dir: dir, Every: time.Minute, Keep: 1})
		require.NoError(t, err)
		stop2 := run(t, s2)
		synctest.Wait()
		want := []string{"bolt:OTHER@1000", id + "@3", id2 + "@1"}
		slices.Sort(want)
		require.Equal(t, want, identityRevisions(t, dir))
		require.NoError(t, stop2())

		// A snapshot of the store above its revision: kept, and named.
		snapshottest.WriteFile(t, filepath.Join(dir, "elsewhen.snap"), snapshottest.Header{Identity: id, Revision: 50},
			snapshottest.Object("a", "{}", 50))
		_, err = m.Create(ctx, "d", []byte("{}"))
		require.NoError(t, err)
		time.Sleep(time.Minute) // the bubble's fake clock
		synctest.Wait()
		want = []string{"bolt:OTHER@1000", id + "@4", id + "@50", id2 + "@1"}
		slices.Sort(want)
		require.Equal(t, want, identityRevisions(t, dir))
		require.Contains(t, logs.String(), "revisions above its own")
		require.NoError(t, stop())
	})
}
