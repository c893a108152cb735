package changelog_test

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/changelog"
	"github.com/converge-go/converge/store/snapshot"
	"github.com/stretchr/testify/require"
)

// shipping is a Shipper running on a store until stop.
type shipping struct {
	sh   *changelog.Shipper[[]byte]
	done chan error
	stop context.CancelFunc
}

// ship starts a Shipper of s with opts.
func ship(t *testing.T, s store.Store[[]byte], opts changelog.Options) *shipping {
	t.Helper()
	sh, err := changelog.NewShipper(s, nil, opts)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	sp := &shipping{sh: sh, done: make(chan error, 1), stop: cancel}
	go func() { sp.done <- sh.Run(ctx) }()
	synctest.Wait() // the shipper watches
	return sp
}

// until waits, on the bubble's clock, until every change up to rev is
// synced.
func (sp *shipping) until(t *testing.T, rev int64) {
	t.Helper()
	for sp.sh.Synced() < rev {
		select {
		case err := <-sp.done:
			t.Fatalf("the shipper ended at %d before %d: %v", sp.sh.Synced(), rev, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// end stops the Shipper and waits for Run to return nil.
func (sp *shipping) end(t *testing.T) {
	t.Helper()
	sp.stop()
	require.NoError(t, <-sp.done)
}

// model is the state of a store after each of its revisions.
type model struct {
	states map[int64]map[string]string // revision → key → value
	cur    map[string]store.Object[[]byte]
	revs   []int64
}

func newModel() *model {
	return &model{states: map[int64]map[string]string{}, cur: map[string]store.Object[[]byte]{}}
}

// at returns the state at rev: that of the highest revision recorded at or
// below it.
func (m *model) at(rev int64) map[string]string {
	var best int64 = -1
	for _, r := range m.revs {
		if r <= rev && r > best {
			best = r
		}
	}
	if best < 0 {
		return map[string]string{}
	}
	return m.states[best]
}

func (m *model) record(rev int64) {
	st := map[string]string{}
	for k, o := range m.cur {
		st[k] = string(o.Value)
	}
	m.states[rev] = st
	m.revs = append(m.revs, rev)
}

// change makes one random change to s, recorded in m, and returns its
// revision.
func (m *model) change(t *testing.T, ctx context.Context, s store.Store[[]byte], rng *rand.Rand, keys int) int64 {
	t.Helper()
	key := fmt.Sprintf("k/%02d", rng.IntN(keys))
	old, exists := m.cur[key]
	val := []byte(fmt.Sprintf("v%d", rng.Int64()))
	var rev int64
	switch {
	case !exists:
		o, err := s.Create(ctx, key, val)
		require.NoError(t, err)
		m.cur[key], rev = o, o.Revision
	case rng.IntN(4) == 0:
		r, err := s.Delete(ctx, key, old.Revision)
		require.NoError(t, err)
		delete(m.cur, key)
		rev = r
	default:
		o, err := s.Update(ctx, key, val, old.Revision)
		require.NoError(t, err)
		m.cur[key], rev = o, o.Revision
	}
	m.record(rev)
	return rev
}

// stateOf reads the snapshot-format state r holds.
func stateOf(t *testing.T, r io.Reader) (snapshot.Info, map[string]string) {
	t.Helper()
	info, objs, err := snapshot.Read(r)
	require.NoError(t, err)
	got := map[string]string{}
	for _, o := range objs {
		got[o.Key] = string(o.Value)
	}
	return info, got
}

// requireStateAt restores the archive to rev and compares it with m.
func requireStateAt(t *testing.T, a changelog.Archive, m *model, rev int64) {
	t.Helper()
	r, p, err := a.State(t.Context(), changelog.Target{Revision: rev})
	require.NoError(t, err, "revision %d", rev)
	info, got := stateOf(t, r)
	require.Equal(t, rev, p.Revision)
	require.Equal(t, rev, info.Revision)
	require.True(t, maps.Equal(m.at(rev), got), "revision %d: got %v, want %v", rev, got, m.at(rev))
}

// saveSnapshot saves a snapshot of s into dir, as a Saver does.
func saveSnapshot(t *testing.T, s store.Store[[]byte], dir string) snapshot.Info {
	t.Helper()
	rev, err := s.Revision(t.Context())
	require.NoError(t, err)
	info, err := snapshot.WriteFile(t.Context(), filepath.Join(dir, snapshot.FileName(rev, time.Now())), snapshot.Bytes(s))
	require.NoError(t, err)
	return info
}
