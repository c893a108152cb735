package store_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/store"
)

// TestADiffAfterAnyRevisionIsTheNetChangeWhateverTheWrites is a model of
// Diff: random creates, updates, deletes and creates again of keys under
// two prefixes, some written rarely, with Diffs after random earlier
// revisions between them, over stores that scan every key and over
// stores that keep their order of writes (from their first Diff on,
// dropping its stale entries many times over). Each Diff equals the net
// change the model computes from the state at after and the state now, in
// revision order, and fails with ErrCompacted exactly when a delete after
// its revision has been forgotten.
func TestADiffAfterAnyRevisionIsTheNetChangeWhateverTheWrites(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 41))
			tombs := []int{5, 1000}[seed%2]
			// The store keeps its order of writes from its first Diff on,
			// once it knows 20 keys, or never (it scans every key).
			orderFrom := []int{0, 20, 1 << 16}[seed%3]
			checkDiffModel(t, rng, store.NewMemory[int](store.WithTombstones(tombs), store.WithOrderFrom(orderFrom)), tombs)
		})
	}
}

// diffModel is the state of the store at every revision, and the
// revisions of its deletes, oldest first.
type diffModel struct {
	states  []map[string]store.Object[int] // states[r]: the state at revision r
	deletes []int64
}

func (m *diffModel) now() map[string]store.Object[int] { return m.states[len(m.states)-1] }

// wrote records the state after a write of obj (a delete when deleted).
func (m *diffModel) wrote(obj store.Object[int], deleted bool) {
	next := make(map[string]store.Object[int], len(m.now())+1)
	for k, o := range m.now() {
		next[k] = o
	}
	if deleted {
		delete(next, obj.Key)
		m.deletes = append(m.deletes, obj.Revision)
	} else {
		next[obj.Key] = obj
	}
	m.states = append(m.states, next)
}

// writeRandomly writes value to key in s and records the write: a
// create if the model has no key, else a delete one time in deleteOdds,
// else an update.
func (m *diffModel) writeRandomly(t *testing.T, rng *rand.Rand, s *store.Memory[int], key string, value, deleteOdds int) {
	t.Helper()
	ctx := t.Context()
	cur, live := m.now()[key]
	switch {
	case !live:
		obj, err := s.Create(ctx, key, value)
		require.NoError(t, err)
		m.wrote(obj, false)
	case rng.IntN(deleteOdds) == 0:
		rev, err := s.Delete(ctx, key, cur.Revision)
		require.NoError(t, err)
		cur.Revision = rev
		m.wrote(cur, true)
	default:
		obj, err := s.Update(ctx, key, value, cur.Revision)
		require.NoError(t, err)
		m.wrote(obj, false)
	}
}

func checkDiffModel(t *testing.T, rng *rand.Rand, s *store.Memory[int], tombs int) {
	m := &diffModel{states: []map[string]store.Object[int]{{}}}
	for step := range 4000 {
		key := fmt.Sprintf("%s/%d", []string{"a", "b"}[rng.IntN(2)], rng.IntN(12))
		if rng.IntN(500) == 0 { // a key written rarely: its entry outlives many compactions
			key = fmt.Sprintf("a/rare%d", rng.IntN(3))
		}
		m.writeRandomly(t, rng, s, key, step, 3)
		if rng.IntN(40) == 0 {
			after := rng.Int64N(int64(len(m.states)))
			prefix := []string{"", "a/", "b/"}[rng.IntN(3)]
			checkDiff(t, s, m, tombs, prefix, after)
		}
	}
}

// checkDiff compares s's Diff under prefix after revision after with the
// model's net change.
func checkDiff(t *testing.T, s *store.Memory[int], m *diffModel, tombs int, prefix string, after int64) {
	t.Helper()
	got, rev, err := s.Diff(t.Context(), prefix, after)
	var floor int64
	if forgotten := len(m.deletes) - tombs; forgotten > 0 {
		floor = m.deletes[forgotten-1]
	}
	if after < floor {
		require.ErrorIs(t, err, store.ErrCompacted, "a Diff after %d, deletes forgotten up to %d", after, floor)
		return
	}
	require.NoError(t, err)
	now := int64(len(m.states) - 1)
	require.Equal(t, now, rev)
	was, is := m.states[after], m.now()
	seen := map[string]bool{}
	for i, ev := range got {
		require.True(t, i == 0 || got[i-1].Object.Revision < ev.Object.Revision, "events in revision order")
		k := ev.Object.Key
		require.Regexp(t, "^"+prefix, k)
		require.False(t, seen[k], "%s reported twice", k)
		seen[k] = true
		switch cur, live := is[k]; {
		case live:
			want := store.Updated
			if cur.CreateRevision > after {
				want = store.Created
			}
			require.Equal(t, store.Event[int]{Type: want, Object: cur}, ev)
		default:
			require.Equal(t, store.Deleted, ev.Type, "%s", k)
			require.Greater(t, ev.Object.Revision, after)
		}
	}
	for k, cur := range is {
		if old, ok := was[k]; len(k) >= len(prefix) && k[:len(prefix)] == prefix && (!ok || old.Revision != cur.Revision) {
			require.True(t, seen[k], "%s changed after %d and is not reported", k, after)
		}
	}
	for k := range was {
		if _, live := is[k]; !live && len(k) >= len(prefix) && k[:len(prefix)] == prefix {
			require.True(t, seen[k], "%s deleted after %d and is not reported", k, after)
		}
	}
}
