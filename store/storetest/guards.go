package storetest

import (
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

func (suite) guardRevision(t *testing.T, s store.Store[*Value]) {
	ctx := t.Context()
	lease := mustCreate(t, s, "lease", val(1))
	ok := store.Guard{Key: "lease", Revision: lease.Revision}

	obj, err := s.Create(ctx, "a", val(1), ok)
	require.NoError(t, err, "create with a holding guard")
	obj, err = s.Update(ctx, "a", val(2), obj.Revision, ok)
	require.NoError(t, err, "update with a holding guard")

	lease = mustUpdate(t, s, "lease", val(2), lease.Revision)
	stale := ok
	_, err = s.Update(ctx, "a", val(3), obj.Revision, stale)
	requireIs(t, err, store.ErrGuardFailed, "update guarded by a superseded revision")
	_, err = s.Delete(ctx, "a", obj.Revision, stale)
	requireIs(t, err, store.ErrGuardFailed, "delete guarded by a superseded revision")
	_, err = s.Create(ctx, "b", val(1), stale)
	requireIs(t, err, store.ErrGuardFailed, "create guarded by a superseded revision")

	fresh := store.Guard{Key: "lease", Revision: lease.Revision}
	_, err = s.Delete(ctx, "a", obj.Revision, fresh)
	require.NoError(t, err, "delete with a holding guard")
}

func (suite) guardCreateRevision(t *testing.T, s store.Store[*Value]) {
	ctx := t.Context()
	lease := mustCreate(t, s, "lease", val(1))
	g := store.Guard{Key: "lease", Revision: lease.CreateRevision, Created: true}
	mustUpdate(t, s, "lease", val(2), lease.Revision)

	_, err := s.Create(ctx, "a", val(1), g)
	require.NoError(t, err, "a create-revision guard holds across updates of the guarded key")

	_, err = s.Create(ctx, "b", val(1), store.Guard{Key: "lease", Revision: lease.Revision})
	requireIs(t, err, store.ErrGuardFailed, "a revision guard fails after an update of the guarded key")

	cur, err := s.Get(ctx, "lease")
	require.NoError(t, err)
	_, err = s.Delete(ctx, "lease", cur.Revision)
	require.NoError(t, err)
	mustCreate(t, s, "lease", val(3))
	_, err = s.Create(ctx, "c", val(1), g)
	requireIs(t, err, store.ErrGuardFailed, "a create-revision guard fails once the key was recreated")
}

func (suite) guardAbsent(t *testing.T, s store.Store[*Value]) {
	ctx := t.Context()
	absent := store.Guard{Key: "lease"}
	_, err := s.Create(ctx, "a", val(1), absent)
	require.NoError(t, err, "a guard with revision 0 holds for an absent key")
	_, err = s.Create(ctx, "b", val(1), store.Guard{Key: "lease", Created: true})
	require.NoError(t, err, "a create-revision guard with revision 0 holds for an absent key")

	lease := mustCreate(t, s, "lease", val(1))
	_, err = s.Create(ctx, "c", val(1), absent)
	requireIs(t, err, store.ErrGuardFailed, "a guard with revision 0 fails for a present key")
	_, err = s.Create(ctx, "c", val(1), store.Guard{Key: "lease", Revision: lease.Revision}, absent)
	requireIs(t, err, store.ErrGuardFailed, "every guard must hold")
	_, err = s.Create(ctx, "c", val(1), store.Guard{Key: "lease", Revision: lease.Revision}, store.Guard{Key: "other"})
	require.NoError(t, err, "several holding guards")
}

func (suite) guardFailedWritesNothing(t *testing.T, s store.Store[*Value]) {
	ctx := t.Context()
	a := mustCreate(t, s, "a", val(1))
	bad := store.Guard{Key: "lease", Revision: 42}
	before := mustRevision(t, s)
	w := mustWatch(t, s, "", before)

	_, err := s.Create(ctx, "b", val(1), bad)
	requireIs(t, err, store.ErrGuardFailed, "guarded create")
	_, err = s.Update(ctx, "a", val(2), a.Revision, bad)
	requireIs(t, err, store.ErrGuardFailed, "guarded update")
	_, err = s.Delete(ctx, "a", a.Revision, bad)
	requireIs(t, err, store.ErrGuardFailed, "guarded delete")
	_, err = s.Update(ctx, "a", val(2), a.Revision+1, bad)
	require.Error(t, err, "a write failing both its revision and a guard")

	require.Equal(t, before, mustRevision(t, s), "failed guards write nothing")
	got, err := s.Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, a, got)
	_, err = s.Get(ctx, "b")
	requireIs(t, err, store.ErrNotFound, "the guarded create wrote nothing")
	quiet(t, s, w, "")
}
