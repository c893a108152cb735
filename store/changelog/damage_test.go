package changelog_test

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/changelog"
	"github.com/stretchr/testify/require"
)

// shippedLog makes a log of several segments in a directory of its own
// and returns it, the store's identity and the records.
func shippedLog(t *testing.T) (dir, id string, recs []changelog.Record) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		dir = t.TempDir()
		s := store.NewMemory[[]byte]()
		defer s.Close()
		var err error
		id, err = s.Identity(t.Context())
		require.NoError(t, err)
		rng := rand.New(rand.NewPCG(5, 5))
		m := newModel()
		sp := ship(t, s, changelog.Options{Dir: dir, SegmentSize: 300})
		var last int64
		for range 40 {
			last = m.change(t, t.Context(), s, rng, 5)
		}
		sp.until(t, last)
		sp.end(t)
		recs, err = changelog.Records(dir, id)
		require.NoError(t, err)
		// Keep the log beyond the bubble's temporary directory.
		keep := filepath.Join(os.TempDir(), "changelog-damage-"+filepath.Base(dir))
		require.NoError(t, os.CopyFS(keep, os.DirFS(dir)))
		dir = keep
	})
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir, id, recs
}

// frames returns the offsets at which the frames of a segment start, and
// its size.
func frames(t *testing.T, data []byte) []int {
	t.Helper()
	var offs []int
	for off := 0; off < len(data); off += 8 + int(binary.LittleEndian.Uint32(data[off:])) {
		offs = append(offs, off)
	}
	return offs
}

// damaged copies the log of dir, the segment seg changed by change.
func damaged(t *testing.T, dir, seg string, change func([]byte) []byte) string {
	t.Helper()
	out := t.TempDir()
	require.NoError(t, os.CopyFS(out, os.DirFS(dir)))
	data, err := os.ReadFile(filepath.Join(dir, seg))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(out, seg), change(data), 0o600))
	return out
}

// requirePrefix checks that got is the first records of want.
func requirePrefix(t *testing.T, got, want []changelog.Record, msg string) {
	t.Helper()
	require.LessOrEqual(t, len(got), len(want), msg)
	for i := range got {
		require.Equal(t, want[i], got[i], msg)
	}
}

func TestATornOrDamagedRecordIsDetectedAndNeverSkippedPast(t *testing.T) {
	dir, id, recs := shippedLog(t)
	segs := segmentFiles(t, dir)
	require.GreaterOrEqual(t, len(segs), 3)
	before := recordsBefore(t, segs)
	last := filepath.Base(segs[len(segs)-1])
	lastData, err := os.ReadFile(segs[len(segs)-1])
	require.NoError(t, err)
	offs := frames(t, lastData)

	t.Run("every cut of the last segment is a torn tail", func(t *testing.T) {
		for cut := 1; cut < len(lastData); cut++ {
			out := damaged(t, dir, last, func(b []byte) []byte { return b[:cut] })
			got, err := changelog.Records(out, id)
			whole := 0 // frames whole before the cut, the header included
			for _, o := range offs {
				if o < cut {
					whole++
				}
			}
			atBoundary := false
			for _, o := range offs {
				atBoundary = atBoundary || o == cut
			}
			if atBoundary {
				require.NoError(t, err, "cut at %d", cut)
			} else {
				require.ErrorIs(t, err, changelog.ErrTorn, "cut at %d", cut)
				require.ErrorIs(t, err, changelog.ErrDamaged, "cut at %d", cut)
				whole--
			}
			require.Equal(t, recs[:before[last]+max(whole-1, 0)], got, "cut at %d", cut)
			_, p, err := changelog.Archive{Dir: out}.State(t.Context(), changelog.Target{})
			require.NoError(t, err, "cut at %d", cut)
			require.Equal(t, !atBoundary, p.Torn != nil)
			_, _, err = changelog.Archive{Dir: out}.State(t.Context(), changelog.Target{Revision: recs[len(recs)-1].Revision + 1})
			require.ErrorIs(t, err, changelog.ErrGap)
		}
	})

	t.Run("every damaged byte is an error, never skipped past", func(t *testing.T) {
		for i, seg := range segs {
			if i != 0 && i != len(segs)/2 && i != len(segs)-1 {
				continue
			}
			name := filepath.Base(seg)
			size := len(mustRead(t, seg))
			for at := range size {
				out := damaged(t, dir, name, func(b []byte) []byte { b[at] ^= 0x10; return b })
				got, err := changelog.Records(out, id)
				if err == nil {
					// A bit of the header's JSON that changes nothing
					// read (the case of a letter in a time zone, say).
					require.Equal(t, recs, got, "segment %d byte %d", i, at)
					continue
				}
				require.ErrorIs(t, err, changelog.ErrDamaged, "segment %d byte %d", i, at)
				if i == len(segs)-1 {
					require.True(t, errors.Is(err, changelog.ErrTorn) || at < offs[1], "segment %d byte %d: %v", i, at, err)
				} else {
					require.NotErrorIs(t, err, changelog.ErrTorn, "segment %d byte %d", i, at)
					_, _, err := changelog.Archive{Dir: out}.State(t.Context(), changelog.Target{})
					require.ErrorIs(t, err, changelog.ErrDamaged, "segment %d byte %d", i, at)
				}
				if i == 0 && at < frames(t, mustRead(t, seg))[1] && len(got) > 0 {
					// The first segment's header lost: the log starts at
					// the next one, as if it had been removed.
					require.Equal(t, recs[before[filepath.Base(segs[1])]:], got, "segment %d byte %d", i, at)
					continue
				}
				requirePrefix(t, got, recs, "segment "+name)
			}
		}
	})
}

// recordsBefore returns, by segment name, how many records the segments
// before it hold.
func recordsBefore(t *testing.T, segs []string) map[string]int {
	t.Helper()
	before := map[string]int{}
	n := 0
	for _, seg := range segs {
		before[filepath.Base(seg)] = n
		n += len(frames(t, mustRead(t, seg))) - 1
	}
	return before
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}
