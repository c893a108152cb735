package changelog_test

import (
	"math/rand/v2"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/changelog"
	"github.com/converge-go/converge/store/snapshot"
	"github.com/stretchr/testify/require"
)

// TestRetentionKeepsEveryPointFromTheOldestSnapshotOn is a property test:
// over random changes, segment sizes, snapshots and snapshot retention (a
// Saver's Keep), and gaps that begin epochs, every revision from the
// oldest snapshot left on restores exactly, while segments before it are
// removed.
func TestRetentionKeepsEveryPointFromTheOldestSnapshotOn(t *testing.T) {
	for seed := range uint64(5) {
		synctest.Test(t, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 41))
			dir, snaps := t.TempDir(), t.TempDir()
			s := store.NewMemory[[]byte](store.WithHistory(30), store.WithWatchLag(20))
			defer s.Close()
			id, err := s.Identity(t.Context())
			require.NoError(t, err)
			opts := changelog.Options{Dir: dir, SnapshotDir: snaps, SegmentSize: 150 + int64(rng.IntN(600))}
			keep := 1 + rng.IntN(3)
			m := newModel()
			sp := ship(t, s, opts)
			var last int64
			var gaps [][2]int64 // revisions not shipped, from–to
			for i := range 300 {
				last = m.change(t, t.Context(), s, rng, 8)
				synctest.Wait()
				switch {
				case rng.IntN(40) == 0:
					saveSnapshot(t, s, snaps)
					_, err := snapshot.Retain(snaps, id, keep)
					require.NoError(t, err)
				case i%100 == 99 && rng.IntN(2) == 0: // a gap
					sp.until(t, last)
					sp.end(t)
					from := last + 1
					for range 40 {
						last = m.change(t, t.Context(), s, rng, 8)
					}
					gaps = append(gaps, [2]int64{from, last - 1})
					sp = ship(t, s, opts)
				}
			}
			sp.until(t, last)
			sp.end(t)

			files, _, err := snapshot.Files(snaps)
			require.NoError(t, err)
			oldest := files[len(files)-1].Info.Revision
			for _, seg := range segmentFiles(t, dir) {
				require.False(t, strings.Contains(seg, "changes-00000000000000000001-"), "the first segment is kept, with a snapshot at %d", oldest)
			}
			a := changelog.Archive{Dir: dir, SnapshotDirs: []string{snaps}}
			for rev := oldest; rev <= last; rev++ {
				if inGap(gaps, rev) {
					_, _, err := a.State(t.Context(), changelog.Target{Revision: rev})
					require.ErrorIs(t, err, changelog.ErrGap, "revision %d", rev)
					continue
				}
				requireStateAt(t, a, m, rev)
			}
			requireStateAt(t, a, m, last)
		})
	}
}

func inGap(gaps [][2]int64, rev int64) bool {
	for _, g := range gaps {
		if g[0] <= rev && rev <= g[1] {
			return true
		}
	}
	return false
}
