package snapshot_test

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/converge-go/converge/store/snapshot"
	"github.com/converge-go/converge/store/snapshot/snapshottest"
	"github.com/stretchr/testify/require"
)

// A generated snapshot file: what its header says, and whether it is
// damaged after its header (truncated) or before (no header at all).
type genFile struct {
	name     string
	identity string
	revision int64
	time     time.Time
	damaged  bool
	junk     bool
}

// genIdentities are the identities generated files have; "bolt:C" has
// none, and "" is a store without an identity.
var genIdentities = []string{"bolt:A", "bolt:B", ""}

// genDir writes between 1 and 8 snapshot files into a new directory: of
// every identity, with revisions that often tie, times from the past to
// far ahead (a clock set wrong), a quarter damaged, a few without a header.
func genDir(t *testing.T, rnd *rand.Rand) (string, []genFile) {
	t.Helper()
	dir := t.TempDir()
	var files []genFile
	for i, n := range rnd.Perm(1 + rnd.IntN(8)) {
		f := genFile{
			name:     fmt.Sprintf("%02d%s", n, snapshot.Ext),
			identity: genIdentities[rnd.IntN(len(genIdentities))],
			revision: 1 + rnd.Int64N(5),
			time:     time.Date(1990+rnd.IntN(110), time.Month(1+i%12), 1, 0, 0, 0, 0, time.UTC),
			damaged:  rnd.IntN(4) == 0,
			junk:     rnd.IntN(12) == 0,
		}
		path := filepath.Join(dir, f.name)
		switch {
		case f.junk:
			require.NoError(t, os.WriteFile(path, []byte("not a snapshot\n"), 0o600))
		default:
			snapshottest.WriteFile(t, path, snapshottest.Header{Identity: f.identity, Revision: f.revision, Time: f.time},
				snapshottest.Object("k", `{"at":`+fmt.Sprint(f.revision)+`}`, f.revision))
			if f.damaged {
				damage(t, path)
			}
		}
		files = append(files, f)
	}
	return dir, files
}

// modelOrder is the contract's order of a store's snapshots: by
// revision, the highest first, then by name, the last first.
func modelOrder(files []genFile, identity string) []genFile {
	var own []genFile
	for _, f := range files {
		if !f.junk && f.identity == identity {
			own = append(own, f)
		}
	}
	slices.SortFunc(own, func(a, b genFile) int {
		return cmp.Or(cmp.Compare(b.revision, a.revision), strings.Compare(b.name, a.name))
	})
	return own
}

// Latest chooses, of the snapshots whose header names the identity asked
// for, the good one with the highest revision (the last name among equal
// revisions), whatever the times in the headers; it never chooses one of
// another identity, and without a good one of its own fails with
// ErrNoSnapshot, and ErrIdentity when others' are there, naming them.
// LatestAtMost does the same below a revision, naming those above it.
// Checked against a model of the contract over generated directories.
func TestLatestChoosesByIdentityThenRevisionNeverByTheClock(t *testing.T) {
	rnd := rand.New(rand.NewPCG(8, 36))
	for round := range 150 {
		dir, files := genDir(t, rnd)
		for _, id := range append(genIdentities, "bolt:C") {
			ceiling := int64(math.MaxInt64)
			found, err := snapshot.Latest(dir, id)
			if round%2 == 1 {
				ceiling = 1 + rnd.Int64N(6)
				found, err = snapshot.LatestAtMost(dir, id, ceiling)
			}
			what := fmt.Sprintf("round %d, identity %q, at most %d, files %+v", round, id, ceiling, files)
			var want *genFile
			wantSkipped, wantAbove := 0, 0
			for _, f := range files {
				if f.junk {
					wantSkipped++
				}
			}
			for _, f := range modelOrder(files, id) {
				if f.revision > ceiling {
					wantAbove++
					continue
				}
				if !f.damaged {
					want = &f
					break
				}
				wantSkipped++
			}
			foreign := 0
			for _, f := range files {
				if !f.junk && f.identity != id {
					foreign++
				}
			}
			require.Len(t, found.Foreign, foreign, what)
			require.Len(t, found.Above, wantAbove, what)
			require.Len(t, found.Skipped, wantSkipped, what)
			if want == nil {
				require.ErrorIs(t, err, snapshot.ErrNoSnapshot, what)
				if foreign > 0 {
					require.ErrorIs(t, err, snapshot.ErrIdentity, what)
					require.Contains(t, err.Error(), fmt.Sprintf("%q", found.Foreign[0].Info.Identity), what)
				} else {
					require.NotErrorIs(t, err, snapshot.ErrIdentity, what)
				}
				continue
			}
			require.NoError(t, err, what)
			require.Equal(t, filepath.Join(dir, want.name), found.Path, what)
			require.Equal(t, id, found.Info.Identity, what)
			require.Equal(t, want.revision, found.Info.Revision, what)
		}
	}
}

// Retain, for any keep from 1 to 5, removes exactly the snapshots of its
// identity that come after the keep-th good one in Latest's order (by
// revision, then name), whatever their times; it never removes a
// snapshot of another identity, a file without a header, or a damaged
// snapshot above the oldest kept one. Checked against a model of the
// contract over generated directories.
func TestRetainKeepsTheHighestRevisionsOfItsIdentityOnly(t *testing.T) {
	rnd := rand.New(rand.NewPCG(9, 36))
	for round := range 150 {
		dir, files := genDir(t, rnd)
		id := genIdentities[round%len(genIdentities)]
		keep := 1 + round%5
		var want []string
		good := 0
		for _, f := range modelOrder(files, id) {
			if good >= keep {
				want = append(want, filepath.Join(dir, f.name))
				continue
			}
			if !f.damaged {
				good++
			}
		}
		removed, err := snapshot.Retain(dir, id, keep)
		require.NoError(t, err)
		slices.Sort(removed)
		slices.Sort(want)
		require.Equal(t, want, removed, "round %d, identity %q, keep %d, files %+v", round, id, keep, files)
		for _, path := range removed {
			require.NoFileExists(t, path)
		}
		require.Len(t, names(t, dir), len(files)-len(want))
	}
}
