package storetest

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// differ returns s as a store.Differ, or skips: catching up by difference
// is an optional contract.
func differ(t *testing.T, s store.Store[*Value]) store.Differ[*Value] {
	t.Helper()
	d, ok := s.(store.Differ[*Value])
	if !ok {
		t.Skipf("%T does not implement store.Differ", s)
	}
	return d
}

// diffReportsNetChange: Diff reports each key changed after a revision
// once, with its state now (created, updated, or deleted with its last
// value), in revision order, and nothing for an unchanged key.
func (suite) diffReportsNetChange(t *testing.T, s store.Store[*Value]) {
	d := differ(t, s)
	ctx := t.Context()
	a := mustCreate(t, s, "a", val(1))
	b := mustCreate(t, s, "b", val(2))
	mustCreate(t, s, "same", val(3))
	mustCreate(t, s, "other/x", val(4))
	from := mustRevision(t, s)
	a = mustUpdate(t, s, "a", val(10), a.Revision)
	a = mustUpdate(t, s, "a", val(11), a.Revision)
	bGone, err := s.Delete(ctx, "b", b.Revision)
	require.NoError(t, err)
	c := mustCreate(t, s, "c", val(12))
	tmp := mustCreate(t, s, "tmp", val(13))
	_, err = s.Delete(ctx, "tmp", tmp.Revision)
	require.NoError(t, err)
	mustCreate(t, s, "other/y", val(14))
	now := mustRevision(t, s)

	changes, rev, err := d.Diff(ctx, "", from)
	require.NoError(t, err)
	require.Equal(t, now, rev, "Diff reads the store as of its revision now")
	var got []string
	last := int64(0)
	for _, ev := range changes {
		require.GreaterOrEqual(t, ev.Object.Revision, last, "events in revision order")
		last = ev.Object.Revision
		if ev.Object.Key == "tmp" {
			require.Equal(t, store.Deleted, ev.Type, "a key created and deleted meanwhile is Deleted or absent")
			continue
		}
		got = append(got, fmt.Sprintf("%s %s %d@%d", ev.Type, ev.Object.Key, ev.Object.Value.N, ev.Object.Revision))
	}
	require.Equal(t, []string{
		fmt.Sprintf("Updated a 11@%d", a.Revision),
		fmt.Sprintf("Deleted b 2@%d", bGone),
		fmt.Sprintf("Created c 12@%d", c.Revision),
		fmt.Sprintf("Created other/y 14@%d", now),
	}, got)

	changes, _, err = d.Diff(ctx, "other/", from)
	require.NoError(t, err)
	require.Len(t, changes, 1, "a prefix limits the diff")
	require.Equal(t, "other/y", changes[0].Object.Key)
	changes, rev, err = d.Diff(ctx, "", now)
	require.NoError(t, err)
	require.Empty(t, changes, "nothing changed after now")
	require.Equal(t, now, rev)
	_, _, err = d.Diff(ctx, "", -1)
	requireIs(t, err, store.ErrInvalid, "a negative revision")
}

// watchCatchingUp: a watcher that falls behind the writers catches up by
// difference instead of ending: whatever random creates, updates and
// deletes run while it does not read (more than the backend lets a
// watcher lag, SlowWatcherWrites), it does not end: the state its events
// lead to is the store's, and its events come in revision order.
func (s suite) watchCatchingUp(t *testing.T, st store.Store[*Value]) {
	differ(t, st)
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(41, 7))
	model := map[string]store.Object[*Value]{}
	write := func(i int) {
		key := fmt.Sprintf("k%02d", rng.IntN(40))
		cur, ok := model[key]
		switch {
		case !ok:
			model[key] = mustCreate(t, st, key, val(i))
		case rng.IntN(4) == 0:
			_, err := st.Delete(ctx, key, cur.Revision)
			require.NoError(t, err)
			delete(model, key)
		default:
			model[key] = mustUpdate(t, st, key, val(i), cur.Revision)
		}
	}
	for i := range 20 {
		write(i)
	}
	from := mustRevision(t, st)
	w, err := store.WatchCatchingUp(ctx, st, "", from)
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	seen := map[string]store.Object[*Value]{}
	for k, o := range model {
		seen[k] = o
	}
	writes := s.opts.SlowWatcherWrites
	for i := range writes {
		write(i)
	}
	now := mustRevision(t, st)
	pr, ok := w.(store.ProgressRequester)
	require.True(t, ok, "the watcher reports progress")
	require.NoError(t, pr.RequestProgress(ctx))
	delivered, last := 0, from
	for {
		ev := next(t, w)
		if ev.Type == store.Progress {
			if ev.Object.Revision >= now {
				break
			}
			require.NoError(t, pr.RequestProgress(ctx))
			continue
		}
		delivered++
		require.GreaterOrEqual(t, ev.Object.Revision, last, "events in revision order")
		last = ev.Object.Revision
		if ev.Type == store.Deleted {
			delete(seen, ev.Object.Key)
		} else {
			seen[ev.Object.Key] = ev.Object
		}
	}
	require.Equal(t, model, seen, "the events lead to the store's state")
	require.LessOrEqual(t, delivered, writes+20, "no change is delivered twice")
}
