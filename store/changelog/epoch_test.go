package changelog_test

import (
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/changelog"
	"github.com/converge-go/converge/store/snapshot"
	"github.com/stretchr/testify/require"
)

// TestAGapBeginsAnEpochThatRestoresOnlyFromItsOwnSnapshots: the shipper
// stopped while the store compacted the changes after the log's last
// revision; restarted, it begins an epoch with a snapshot. A point of the
// gap is ErrGap, and a point of the new epoch without its snapshots is
// ErrNoSnapshot, never built on the older snapshot across the gap.
func TestAGapBeginsAnEpochThatRestoresOnlyFromItsOwnSnapshots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(7, 7))
		dir, snaps := t.TempDir(), t.TempDir()
		s := store.NewMemory[[]byte](store.WithHistory(20), store.WithWatchLag(15))
		defer s.Close()
		opts := changelog.Options{Dir: dir, SnapshotDir: snaps, SegmentSize: 500}
		m := newModel()
		sp := ship(t, s, opts)
		var last1 int64
		for range 30 {
			last1 = m.change(t, t.Context(), s, rng, 6)
			synctest.Wait() // shipped before the watch lags
		}
		sp.until(t, last1)
		sp.end(t)
		var lost int64
		for range 40 { // not shipped, and compacted from the store's history
			lost = m.change(t, t.Context(), s, rng, 6)
		}
		sp = ship(t, s, opts)
		var last int64
		for range 30 {
			last = m.change(t, t.Context(), s, rng, 6)
			synctest.Wait()
		}
		sp.until(t, last)
		sp.end(t)

		a := changelog.Archive{Dir: dir, SnapshotDirs: []string{snaps}}
		for rev := int64(1); rev <= last1; rev++ {
			requireStateAt(t, a, m, rev)
		}
		for rev := last1 + 1; rev < lost; rev++ {
			_, _, err := a.State(t.Context(), changelog.Target{Revision: rev})
			require.ErrorIs(t, err, changelog.ErrGap, "revision %d, in the gap", rev)
		}
		for rev := lost; rev <= last; rev++ {
			requireStateAt(t, a, m, rev)
		}
		// Without the new epoch's snapshot, its points are not restored
		// from the first epoch's.
		files, _, err := snapshot.Files(snaps)
		require.NoError(t, err)
		require.Len(t, files, 2, "a snapshot for each epoch")
		require.Equal(t, lost, files[0].Info.Revision)
		require.NoError(t, os.Remove(files[0].Path))
		for _, rev := range []int64{lost, last} {
			_, _, err := a.State(t.Context(), changelog.Target{Revision: rev})
			require.ErrorIs(t, err, snapshot.ErrNoSnapshot, "revision %d", rev)
		}
		requireStateAt(t, a, m, last1)
	})
}

// TestAShipperResumesItsLogAfterARestartAndCutsATornTail: a shipper
// stopped and started again goes on with its epoch, the record a crash
// left torn cut, no change lost or doubled.
func TestAShipperResumesItsLogAfterARestartAndCutsATornTail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(3, 3))
		dir := t.TempDir()
		s := store.NewMemory[[]byte]()
		defer s.Close()
		id, err := s.Identity(t.Context())
		require.NoError(t, err)
		m := newModel()
		opts := changelog.Options{Dir: dir, SegmentSize: 700}
		var last int64
		for round := range 4 {
			sp := ship(t, s, opts)
			for range 25 {
				last = m.change(t, t.Context(), s, rng, 6)
			}
			sp.until(t, last)
			sp.end(t)
			if round%2 == 0 {
				tearLastSegment(t, dir)
			}
		}
		recs, err := changelog.Records(dir, id)
		require.NoError(t, err)
		var revs []int64
		for _, r := range recs {
			revs = append(revs, r.Revision)
		}
		require.Equal(t, m.revs, revs, "every change once, in order")
		requireStateAt(t, changelog.Archive{Dir: dir}, m, last)
	})
}

// tearLastSegment appends half a record to the last segment of dir.
func tearLastSegment(t *testing.T, dir string) {
	t.Helper()
	segs := segmentFiles(t, dir)
	f, err := os.OpenFile(segs[len(segs)-1], os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write([]byte{40, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7})
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// segmentFiles returns the paths of dir's segments, in order.
func segmentFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var segs []string
	for _, e := range entries {
		if len(e.Name()) > 8 && e.Name()[:8] == "changes-" {
			segs = append(segs, dir+"/"+e.Name())
		}
	}
	slices.Sort(segs)
	return segs
}
