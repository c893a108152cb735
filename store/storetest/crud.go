package storetest

import (
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

func (suite) createAndGet(t *testing.T, s store.Store[*Value]) {
	ctx := t.Context()
	before := mustRevision(t, s)
	obj := mustCreate(t, s, "a", val(1))
	require.Equal(t, "a", obj.Key)
	require.Equal(t, val(1), obj.Value)
	require.Greater(t, obj.Revision, before, "create takes a new revision")
	require.Equal(t, obj.Revision, obj.CreateRevision, "a new key's CreateRevision is its Revision")
	require.Equal(t, obj.Revision, mustRevision(t, s))

	got, err := s.Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, obj, got)
}

func (suite) createExisting(t *testing.T, s store.Store[*Value]) {
	first := mustCreate(t, s, "a", val(1))
	_, err := s.Create(t.Context(), "a", val(2))
	requireIs(t, err, store.ErrExists, "Create on an existing key")
	require.Equal(t, first.Revision, mustRevision(t, s), "a failed create writes nothing")
	got, err := s.Get(t.Context(), "a")
	require.NoError(t, err)
	require.Equal(t, first, got)
}

func (suite) getNotFound(t *testing.T, s store.Store[*Value]) {
	_, err := s.Get(t.Context(), "missing")
	requireIs(t, err, store.ErrNotFound, "Get of a missing key")
}

func (suite) updateSucceeds(t *testing.T, s store.Store[*Value]) {
	created := mustCreate(t, s, "a", val(1))
	updated := mustUpdate(t, s, "a", val(2), created.Revision)
	require.Greater(t, updated.Revision, created.Revision)
	require.Equal(t, created.CreateRevision, updated.CreateRevision, "update keeps CreateRevision")
	require.Equal(t, val(2), updated.Value)
	require.Equal(t, updated.Revision, mustRevision(t, s))

	again := mustUpdate(t, s, "a", val(3), updated.Revision)
	require.Greater(t, again.Revision, updated.Revision)
	got, err := s.Get(t.Context(), "a")
	require.NoError(t, err)
	require.Equal(t, again, got)
}

func (suite) updateConflict(t *testing.T, s store.Store[*Value]) {
	created := mustCreate(t, s, "a", val(1))
	updated := mustUpdate(t, s, "a", val(2), created.Revision)
	_, err := s.Update(t.Context(), "a", val(3), created.Revision)
	requireIs(t, err, store.ErrConflict, "Update with a stale revision")
	_, err = s.Update(t.Context(), "a", val(3), updated.Revision+100)
	requireIs(t, err, store.ErrConflict, "Update with a future revision")
	require.Equal(t, updated.Revision, mustRevision(t, s), "a conflicting update writes nothing")
	got, err := s.Get(t.Context(), "a")
	require.NoError(t, err)
	require.Equal(t, updated, got)
}

func (suite) updateNotFound(t *testing.T, s store.Store[*Value]) {
	before := mustRevision(t, s)
	_, err := s.Update(t.Context(), "missing", val(1), 1)
	requireIs(t, err, store.ErrNotFound, "Update of a missing key")
	require.Equal(t, before, mustRevision(t, s), "a failed update writes nothing")
}

func (suite) deleteSemantics(t *testing.T, s store.Store[*Value]) {
	ctx := t.Context()
	created := mustCreate(t, s, "a", val(1))
	updated := mustUpdate(t, s, "a", val(2), created.Revision)

	_, err := s.Delete(ctx, "a", created.Revision)
	requireIs(t, err, store.ErrConflict, "Delete with a stale revision")
	require.Equal(t, updated.Revision, mustRevision(t, s), "a conflicting delete writes nothing")
	_, err = s.Get(ctx, "a")
	require.NoError(t, err, "a conflicting delete leaves the key")

	delRev, err := s.Delete(ctx, "a", updated.Revision)
	require.NoError(t, err)
	require.Greater(t, delRev, updated.Revision, "delete takes a new revision")
	require.Equal(t, delRev, mustRevision(t, s))
	_, err = s.Get(ctx, "a")
	requireIs(t, err, store.ErrNotFound, "Get after Delete")

	_, err = s.Delete(ctx, "a", updated.Revision)
	requireIs(t, err, store.ErrNotFound, "Delete of a deleted key")
	_, err = s.Update(ctx, "a", val(3), updated.Revision)
	requireIs(t, err, store.ErrNotFound, "Update of a deleted key")
	require.Equal(t, delRev, mustRevision(t, s))

	recreated := mustCreate(t, s, "a", val(4))
	require.Greater(t, recreated.CreateRevision, delRev, "recreating a key gives it a new CreateRevision")
	require.Equal(t, recreated.Revision, recreated.CreateRevision)
}

func (suite) revisionsGrow(t *testing.T, s store.Store[*Value]) {
	ctx := t.Context()
	last := mustRevision(t, s)
	step := func(what string, rev int64) {
		t.Helper()
		require.Greater(t, rev, last, "%s: revisions only grow", what)
		require.Equal(t, rev, mustRevision(t, s), "%s: Revision reports the last write", what)
		last = rev
	}
	for i := range 5 {
		a := mustCreate(t, s, "a", val(i))
		step("create a", a.Revision)
		b, err := s.Create(ctx, "b", val(i))
		if err == nil {
			step("create b", b.Revision)
		} else {
			requireIs(t, err, store.ErrExists, "create b")
			require.Equal(t, last, mustRevision(t, s))
		}
		u := mustUpdate(t, s, "a", val(i+1), a.Revision)
		step("update a", u.Revision)
		d, err := s.Delete(ctx, "a", u.Revision)
		require.NoError(t, err)
		step("delete a", d)
	}
}
