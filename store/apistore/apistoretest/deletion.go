package apistoretest

import (
	"errors"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/stretchr/testify/require"
)

func createOnMarked(t *testing.T, s *subject) {
	ctx := t.Context()
	marked := mark(t, s, "a", "cleanup")
	before := revision(t, s)
	_, err := s.layer.Create(ctx, "a", doc(nil, `{"n":2}`, ""))
	requireIs(t, err, "Create on a marked key", apistore.ErrDeleting, store.ErrExists)
	unchanged(t, s, before, marked, "Create on a marked key")

	plain := create(t, s, "b", doc(nil, `{"n":1}`, ""))
	before = revision(t, s)
	_, err = s.layer.Create(ctx, "b", doc(nil, `{"n":2}`, ""))
	requireIs(t, err, "Create on an existing key", store.ErrExists)
	require.False(t, errors.Is(err, apistore.ErrDeleting), "Create on a key that is not marked: %v", err)
	unchanged(t, s, before, plain, "Create on an existing key")
}

func guardStopsRemoval(t *testing.T, s *subject) {
	ctx := t.Context()
	lease := create(t, s, "lease", doc(nil, `{"holder":"old"}`, ""))
	term := store.Guard{Key: "lease", Revision: lease.Revision}
	marked := mark(t, s, "a", "cleanup")
	// A new leader takes over: the old term's guard no longer holds.
	_, err := s.layer.Update(ctx, "lease", doc(nil, `{"holder":"new"}`, ""), lease.Revision)
	require.NoError(t, err)
	before := revision(t, s)
	_, deleted, err := s.layer.Replace(ctx, "a", doc(nil, `{"n":1}`, ""), marked.Revision, term)
	requireIs(t, err, "a deposed leader removing the last finalizer", store.ErrGuardFailed)
	require.False(t, deleted)
	unchanged(t, s, before, marked, "a deposed leader removing the last finalizer")

	_, err = s.layer.Update(ctx, "a", doc(nil, `{"n":1}`, ""), marked.Revision, term)
	requireIs(t, err, "a deposed leader's Update removing the last finalizer", store.ErrGuardFailed)
	plain := create(t, s, "b", doc(fin("cleanup"), `{"n":1}`, ""))
	before = revision(t, s)
	_, _, err = s.layer.DeleteWith(ctx, "b", plain.Revision, apistore.Foreground, term)
	requireIs(t, err, "a deposed leader's delete", store.ErrGuardFailed)
	unchanged(t, s, before, plain, "a deposed leader's delete")
}

func recreate(t *testing.T, s *subject) {
	ctx := t.Context()
	first := mark(t, s, "a", "cleanup")
	// A cleanup read the marked object, and is slow; meanwhile another
	// one finishes, and the key is created again.
	_, deleted, err := s.layer.Replace(ctx, "a", doc(nil, `{"n":1}`, ""), first.Revision)
	require.NoError(t, err)
	require.True(t, deleted)
	second := create(t, s, "a", doc(fin("cleanup"), `{"n":2}`, `{"ready":false}`))
	require.Greater(t, second.CreateRevision, first.Revision, "the new object has a new create revision")
	before := revision(t, s)

	_, _, err = s.layer.Replace(ctx, "a", doc(nil, `{"n":1}`, ""), first.Revision)
	requireIs(t, err, "the old cleanup's finalizer removal", store.ErrConflict)
	_, err = s.layer.UpdateStatus(ctx, "a", doc(nil, "", `{"ready":"old"}`), first.Revision)
	requireIs(t, err, "the old cleanup's status write", store.ErrConflict)
	_, _, err = s.layer.DeleteWith(ctx, "a", first.Revision, apistore.Background)
	requireIs(t, err, "the old cleanup's delete", store.ErrConflict)
	unchanged(t, s, before, second, "writes at a revision of the first object")
	_, p := get(t, s, "a")
	require.Nil(t, p.Meta.Deletion, "the new object is not marked")
	require.Equal(t, int64(1), p.Meta.Generation, "the new object starts at generation 1")
}

func propagations(t *testing.T, s *subject) {
	ctx := t.Context()
	for _, tc := range []struct {
		p         apistore.Propagation
		had, want []string
	}{
		{apistore.Foreground, nil, []string{apistore.ForegroundFinalizer}},
		{apistore.Orphan, []string{"cleanup"}, []string{"cleanup", apistore.OrphanFinalizer}},
		{apistore.Foreground, []string{apistore.ForegroundFinalizer}, []string{apistore.ForegroundFinalizer}},
		{apistore.Background, []string{"cleanup"}, []string{"cleanup"}},
	} {
		key := string(tc.p) + "/" + string(rune('a'+len(tc.had)))
		obj := create(t, s, key, doc(fin(tc.had...), `{"n":1}`, ""))
		rev, marked, err := s.layer.DeleteWith(ctx, key, obj.Revision, tc.p)
		require.NoError(t, err, "%s delete of an object with finalizers %v", tc.p, tc.had)
		require.True(t, marked, "%s delete of an object with finalizers %v marks it", tc.p, tc.had)
		got, p := get(t, s, key)
		require.Equal(t, rev, got.Revision)
		require.Equal(t, tc.want, p.Meta.Finalizers, "%s delete of an object with finalizers %v", tc.p, tc.had)
		require.Equal(t, tc.p, p.Meta.Deletion.Propagation)
		require.Equal(t, obj.Revision, p.Meta.Deletion.Revision)
	}

	obj := create(t, s, "unknown", doc(nil, `{"n":1}`, ""))
	before := revision(t, s)
	_, _, err := s.layer.DeleteWith(ctx, "unknown", obj.Revision, apistore.Propagation("sideways"))
	requireIs(t, err, "a delete with an unknown propagation", store.ErrInvalid)
	unchanged(t, s, before, obj, "a delete with an unknown propagation")
}
