package storetest

import (
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// requireQuiet requires that the store is still at revision rev and that
// the watch w, opened at rev, delivers nothing before the write of a
// sentinel key: whatever ran since wrote nothing and made no event.
func requireQuiet(t *testing.T, s store.Store[*Value], w store.Watcher[*Value], rev int64, what string) {
	t.Helper()
	require.Equal(t, rev, mustRevision(t, s), "%s: nothing is written", what)
	sentinel := mustCreate(t, s, "sentinel-"+what, val(0))
	ev := next(t, w)
	require.Equal(t, sentinel.Revision, ev.Object.Revision, "%s: the next event is the sentinel's, got %+v", what, ev)
	_, err := s.Delete(t.Context(), sentinel.Key, sentinel.Revision)
	require.NoError(t, err)
	next(t, w)
}

// unchangedWritesNothing: Modify and CreateOrUpdate whose mutate returns
// what the key holds write nothing, make no event and return the object
// as it is, while a plain Update of the same value is a write (leases and
// heartbeats rely on it).
func (suite) unchangedWritesNothing(t *testing.T, s store.Store[*Value]) {
	ctx := t.Context()
	obj := mustCreate(t, s, "k", val(1))
	rev := mustRevision(t, s)
	w := mustWatch(t, s, "", rev)

	got, err := store.Modify(ctx, s, "k", func(cur *Value) (*Value, error) { return &Value{N: cur.N, S: cur.S}, nil })
	require.NoError(t, err, "Modify that changes nothing")
	require.Equal(t, obj, got, "Modify that changes nothing returns the object as stored")
	requireQuiet(t, s, w, rev, "Modify")
	rev = mustRevision(t, s)

	got, err = store.CreateOrUpdate(ctx, s, "k", func(cur *Value, exists bool) (*Value, error) {
		require.True(t, exists)
		return val(1), nil
	})
	require.NoError(t, err, "CreateOrUpdate that changes nothing")
	require.Equal(t, obj, got, "CreateOrUpdate that changes nothing returns the object as stored")
	requireQuiet(t, s, w, rev, "CreateOrUpdate")

	again := mustUpdate(t, s, "k", val(1), obj.Revision)
	require.Greater(t, again.Revision, obj.Revision, "a plain Update of the same value is a write")
	ev := next(t, w)
	require.Equal(t, store.Updated, ev.Type)
	require.Equal(t, again.Revision, ev.Object.Revision)
}

// unchangedChecksConditions: a Modify or CreateOrUpdate that would change
// nothing still fails on a failed guard, and still sees a write that
// raced with its read (it retries and returns the newer object).
func (suite) unchangedChecksConditions(t *testing.T, s store.Store[*Value]) {
	ctx := t.Context()
	obj := mustCreate(t, s, "k", val(1))
	lease := mustCreate(t, s, "lease", val(1))
	rev := mustRevision(t, s)
	w := mustWatch(t, s, "", rev)

	same := func(cur *Value) (*Value, error) { return &Value{N: cur.N, S: cur.S}, nil }
	stale := store.ModifyOptions{Guards: []store.Guard{{Key: "lease", Revision: lease.Revision + 100}}}
	_, err := store.Modify(ctx, s, "k", same, stale)
	requireIs(t, err, store.ErrGuardFailed, "Modify that changes nothing, with a failed guard")
	_, err = store.CreateOrUpdate(ctx, s, "k", func(cur *Value, _ bool) (*Value, error) { return same(cur) }, stale)
	requireIs(t, err, store.ErrGuardFailed, "CreateOrUpdate that changes nothing, with a failed guard")
	requireQuiet(t, s, w, rev, "failed-guard")

	holding := store.ModifyOptions{Guards: []store.Guard{{Key: "lease", Revision: lease.Revision}}}
	got, err := store.Modify(ctx, s, "k", same, holding)
	require.NoError(t, err, "Modify that changes nothing, with a holding guard")
	require.Equal(t, obj.Revision, got.Revision)

	// A write lands between Modify's read and its check: the check sees it.
	var raced store.Object[*Value]
	got, err = store.Modify(ctx, s, "k", func(cur *Value) (*Value, error) {
		if raced.Revision == 0 {
			raced = mustUpdate(t, s, "k", val(2), obj.Revision)
		}
		return &Value{N: cur.N, S: cur.S}, nil
	})
	require.NoError(t, err)
	require.Equal(t, raced.Revision, got.Revision, "a write between the read and the check is seen, and the round retried")
	require.Equal(t, val(2), got.Value)
}

// checkConditions: Check holds exactly when an Update at the same revision
// with the same guards would be allowed, and writes nothing.
func (suite) checkConditions(t *testing.T, s store.Store[*Value]) {
	ctx := t.Context()
	_, ok := s.(store.Checker)
	require.True(t, ok, "the store implements store.Checker, so that Check is atomic")
	obj := mustCreate(t, s, "k", val(1))
	lease := mustCreate(t, s, "lease", val(1))
	newer := mustUpdate(t, s, "k", val(2), obj.Revision)
	rev := mustRevision(t, s)
	w := mustWatch(t, s, "", rev)

	require.NoError(t, store.Check(ctx, s, "k", newer.Revision), "the current revision")
	require.NoError(t, store.Check(ctx, s, "k", newer.Revision,
		store.Guard{Key: "lease", Revision: lease.Revision},
		store.Guard{Key: "lease", Revision: lease.CreateRevision, Created: true},
		store.Guard{Key: "absent"}), "holding guards")
	requireIs(t, store.Check(ctx, s, "k", obj.Revision), store.ErrConflict, "a stale revision")
	requireIs(t, store.Check(ctx, s, "missing", obj.Revision), store.ErrNotFound, "a missing key")
	requireIs(t, store.Check(ctx, s, "k", newer.Revision, store.Guard{Key: "lease", Revision: lease.Revision + 1}),
		store.ErrGuardFailed, "a failed revision guard")
	requireIs(t, store.Check(ctx, s, "k", newer.Revision, store.Guard{Key: "absent", Revision: 3, Created: true}),
		store.ErrGuardFailed, "a failed guard on an absent key")
	requireIs(t, store.Check(ctx, s, "k", newer.Revision, store.Guard{Key: "lease"}),
		store.ErrGuardFailed, "a guard requiring a present key to be absent")
	requireIs(t, store.Check(ctx, s, "", 1), store.ErrInvalid, "an empty key")
	requireIs(t, store.Check(ctx, s, "k", -1), store.ErrInvalid, "a negative revision")
	requireIs(t, store.Check(ctx, s, "k", newer.Revision, store.Guard{Key: ""}), store.ErrInvalid, "a guard without a key")
	requireQuiet(t, s, w, rev, "Check")
}
