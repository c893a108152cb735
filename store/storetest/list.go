package storetest

import (
	"slices"
	"sync"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

func keysOf(objs []store.Object[*Value]) []string {
	keys := make([]string, len(objs))
	for i, o := range objs {
		keys[i] = o.Key
	}
	return keys
}

func (suite) listPrefixSorted(t *testing.T, s store.Store[*Value]) {
	ctx := t.Context()
	// Created out of order; "a/10" sorts before "a/2" (byte order).
	for _, k := range []string{"b/1", "a/2", "a/10", "ab", "a/1", "é"} {
		mustCreate(t, s, k, val(len(k)))
	}
	rev := mustRevision(t, s)

	all, listRev, err := s.List(ctx, "")
	require.NoError(t, err)
	require.Equal(t, rev, listRev)
	require.Equal(t, []string{"a/1", "a/10", "a/2", "ab", "b/1", "é"}, keysOf(all))

	as, listRev, err := s.List(ctx, "a/")
	require.NoError(t, err)
	require.Equal(t, rev, listRev)
	require.Equal(t, []string{"a/1", "a/10", "a/2"}, keysOf(as))
	for _, o := range as {
		got, err := s.Get(ctx, o.Key)
		require.NoError(t, err)
		require.Equal(t, got, o, "List and Get agree")
	}

	none, listRev, err := s.List(ctx, "zzz")
	require.NoError(t, err)
	require.Empty(t, none)
	require.Equal(t, rev, listRev, "an empty List still reports the revision")
}

// listWrite is one write of listConsistent's writer: its revision, key and
// value (nil for a delete).
type listWrite struct {
	rev   int64
	key   string
	value *Value
}

// listConsistent lists while a writer changes the store and checks that each
// List is exactly the state after the writes up to the revision it reports.
func (suite) listConsistent(t *testing.T, s store.Store[*Value]) {
	ctx := t.Context()
	const keys, writes = 8, 200
	var log []listWrite // written by the writer only; read after wg.Wait
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Go(func() {
		defer close(done)
		log = writeMixed(t, s, keys, writes)
	})

	type snapshot struct {
		rev  int64
		objs []store.Object[*Value]
	}
	var snaps []snapshot
	for listing := true; listing; {
		select {
		case <-done:
			listing = false // one more List after the last write
		default:
		}
		objs, rev, err := s.List(ctx, "")
		require.NoError(t, err)
		snaps = append(snaps, snapshot{rev, objs})
	}
	wg.Wait()
	require.Len(t, log, writes)

	for _, snap := range snaps {
		got := map[string]*Value{}
		for _, o := range snap.objs {
			require.LessOrEqual(t, o.Revision, snap.rev, "object newer than its List's revision")
			got[o.Key] = o.Value
		}
		require.Equal(t, stateAt(log, snap.rev), got, "List at revision %d", snap.rev)
		require.True(t, slices.IsSorted(keysOf(snap.objs)))
	}
	last := snaps[len(snaps)-1]
	require.Equal(t, log[len(log)-1].rev, last.rev, "the final List reflects the last write")
}

// writeMixed makes n writes over keys keys (creates, updates, and every
// third write to a live key a delete) and returns them in order. It
// reports a failed write with t.Errorf and returns what it wrote so far.
func writeMixed(t *testing.T, s store.Store[*Value], keys, n int) []listWrite {
	ctx := t.Context()
	var log []listWrite
	live := map[string]int64{}
	for i := range n {
		key := string(rune('a' + i%keys))
		v := val(i)
		switch rev, ok := live[key]; {
		case !ok:
			obj, err := s.Create(ctx, key, v)
			if err != nil {
				t.Errorf("create %q: %v", key, err)
				return log
			}
			live[key] = obj.Revision
			log = append(log, listWrite{obj.Revision, key, v})
		case i%3 == 0:
			drev, err := s.Delete(ctx, key, rev)
			if err != nil {
				t.Errorf("delete %q: %v", key, err)
				return log
			}
			delete(live, key)
			log = append(log, listWrite{drev, key, nil})
		default:
			obj, err := s.Update(ctx, key, v, rev)
			if err != nil {
				t.Errorf("update %q: %v", key, err)
				return log
			}
			live[key] = obj.Revision
			log = append(log, listWrite{obj.Revision, key, v})
		}
	}
	return log
}

// stateAt returns the store's contents after the writes of log up to rev.
func stateAt(log []listWrite, rev int64) map[string]*Value {
	want := map[string]*Value{}
	for _, w := range log {
		if w.rev > rev {
			break
		}
		if w.value == nil {
			delete(want, w.key)
		} else {
			want[w.key] = w.value
		}
	}
	return want
}
