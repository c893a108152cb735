package changelog_test

import (
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/changelog"
	"github.com/stretchr/testify/require"
)

func TestARestoreToARevisionHoldsExactlyTheStateAtThatRevision(t *testing.T) {
	for seed := range uint64(4) {
		synctest.Test(t, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 40))
			dir, snaps := t.TempDir(), t.TempDir()
			s := store.NewMemory[[]byte]()
			defer s.Close()
			sp := ship(t, s, changelog.Options{Dir: dir, SnapshotDir: snaps, SegmentSize: 300 + int64(rng.IntN(2000))})
			m := newModel()
			var last int64
			for i := range 300 {
				last = m.change(t, t.Context(), s, rng, 12)
				if rng.IntN(50) == 0 {
					saveSnapshot(t, s, snaps)
				}
				if i%7 == 0 {
					<-time.After(time.Duration(rng.IntN(200)) * time.Millisecond)
				}
			}
			sp.until(t, last)
			sp.end(t)
			a := changelog.Archive{Dir: dir, SnapshotDirs: []string{snaps}}
			for rev := int64(1); rev <= last; rev += 1 + int64(rng.IntN(4)) {
				requireStateAt(t, a, m, rev)
			}
			r, p, err := a.State(t.Context(), changelog.Target{})
			require.NoError(t, err)
			_, got := stateOf(t, r)
			require.Equal(t, last, p.Revision)
			require.Equal(t, m.at(last), got)
			require.NoError(t, p.Torn)
		})
	}
}

func TestARestoreToATimeHoldsTheRevisionsReceivedByThen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		dir := t.TempDir()
		s := store.NewMemory[[]byte]()
		defer s.Close()
		sp := ship(t, s, changelog.Options{Dir: dir})
		m := newModel()
		start := time.Now()
		var revs []int64
		for range 20 {
			revs = append(revs, m.change(t, t.Context(), s, rng, 5))
			<-time.After(time.Second)
		}
		sp.until(t, revs[len(revs)-1])
		sp.end(t)
		a := changelog.Archive{Dir: dir}
		for i, rev := range revs {
			// Half a second after the change at i: it, and none after it.
			r, p, err := a.State(t.Context(), changelog.Target{Time: start.Add(time.Duration(i)*time.Second + 500*time.Millisecond)})
			require.NoError(t, err)
			_, got := stateOf(t, r)
			require.Equal(t, rev, p.Revision)
			require.Equal(t, m.at(rev), got)
		}
		_, _, err := a.State(t.Context(), changelog.Target{Time: start.Add(-time.Second)})
		require.ErrorIs(t, err, changelog.ErrGap)
	})
}
