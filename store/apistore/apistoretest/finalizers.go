package apistoretest

import (
	"testing"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/stretchr/testify/require"
)

func deleteWithoutFinalizers(t *testing.T, s *subject) {
	ctx := t.Context()
	a := create(t, s, "a", doc(nil, `{"n":1}`, ""))
	rev, marked, err := s.layer.DeleteWith(ctx, "a", a.Revision, apistore.Background)
	require.NoError(t, err)
	require.False(t, marked, "an object without finalizers is deleted, not marked")
	require.Equal(t, revision(t, s), rev, "DeleteWith returns the revision of the delete")
	gone(t, s, "a")

	b := create(t, s, "b", doc(nil, `{"n":1}`, ""))
	rev, err = s.layer.Delete(ctx, "b", b.Revision)
	require.NoError(t, err)
	require.Equal(t, revision(t, s), rev, "Delete returns the revision of the delete")
	gone(t, s, "b")
}

func deleteMarks(t *testing.T, s *subject) {
	ctx := t.Context()
	created := create(t, s, "a", doc(fin("cleanup"), `{"n":1}`, `{"ready":true}`))
	before := time.Now()
	rev, marked, err := s.layer.DeleteWith(ctx, "a", created.Revision, apistore.Background)
	after := time.Now()
	require.NoError(t, err)
	require.True(t, marked)
	require.Greater(t, rev, created.Revision, "the mark is a write")

	obj, p := get(t, s, "a")
	require.Equal(t, rev, obj.Revision)
	require.Equal(t, created.CreateRevision, obj.CreateRevision, "the marked object is the one created")
	d := p.Meta.Deletion
	require.NotNil(t, d, "the object is marked")
	require.Equal(t, created.Revision, d.Revision, "the mark records the revision the delete was made against")
	require.Equal(t, apistore.Background, d.Propagation)
	require.False(t, d.Time.Before(before) || d.Time.After(after), "the mark's time %v is the delete's, between %v and %v", d.Time, before, after)
	require.Equal(t, []string{"cleanup"}, p.Meta.Finalizers)
	require.Equal(t, int64(1), p.Meta.Generation, "a mark is no spec change")
	require.Equal(t, jsonOf(t, `{"n":1}`), p.Spec)
	require.Equal(t, jsonOf(t, `{"ready":true}`), p.Status)

	objs, _, err := s.layer.List(ctx, "")
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, keys(objs), "a marked object is listed")
}

func keys[T any](objs []store.Object[T]) []string {
	out := []string{}
	for _, o := range objs {
		out = append(out, o.Key)
	}
	return out
}

func markNeverChanges(t *testing.T, s *subject) {
	ctx := t.Context()
	marked := mark(t, s, "a", "cleanup", "other")
	want := parse(t, marked.Value).Meta.Deletion

	cleared := doc(&apistore.Meta{Finalizers: []string{"cleanup", "other"}}, `{"n":2}`, "")
	obj, err := s.layer.Update(ctx, "a", cleared, marked.Revision)
	require.NoError(t, err, "a spec write to a marked object")
	require.Equal(t, want, parse(t, obj.Value).Meta.Deletion, "a write without the mark keeps it")

	other := &apistore.Meta{Finalizers: []string{"cleanup", "other"}, Deletion: &apistore.Deletion{Revision: 1, Propagation: apistore.Orphan}}
	obj, err = s.layer.Update(ctx, "a", doc(other, `{"n":2}`, ""), obj.Revision)
	require.NoError(t, err)
	require.Equal(t, want, parse(t, obj.Value).Meta.Deletion, "a write of another mark keeps the first")

	obj, err = s.layer.UpdateStatus(ctx, "a", doc(nil, "", `{"ready":true}`), obj.Revision)
	require.NoError(t, err, "a status write to a marked object")
	require.Equal(t, want, parse(t, obj.Value).Meta.Deletion)

	before := revision(t, s)
	for _, p := range []apistore.Propagation{apistore.Background, apistore.Foreground, apistore.Orphan} {
		rev, marked, err := s.layer.DeleteWith(ctx, "a", obj.Revision, p)
		require.NoError(t, err, "%s delete of a marked object", p)
		require.True(t, marked)
		require.Equal(t, obj.Revision, rev, "%s delete of a marked object", p)
		unchanged(t, s, before, obj, string(p)+" delete of a marked object")
	}
	_, got := get(t, s, "a")
	require.Equal(t, want, got.Meta.Deletion)
	require.Equal(t, []string{"cleanup", "other"}, got.Meta.Finalizers)
}

func noFinalizerAfterMark(t *testing.T, s *subject) {
	ctx := t.Context()
	marked := mark(t, s, "a", "cleanup")
	before := revision(t, s)
	for name, finalizers := range map[string][]string{
		"one more":   {"cleanup", "late"},
		"a swap":     {"late"},
		"foreground": {"cleanup", apistore.ForegroundFinalizer},
	} {
		v := doc(fin(finalizers...), `{"n":1}`, "")
		_, err := s.layer.Update(ctx, "a", v, marked.Revision)
		requireIs(t, err, "Update adding a finalizer, "+name, apistore.ErrDeleting, store.ErrInvalid)
		_, _, err = s.layer.Replace(ctx, "a", v, marked.Revision)
		requireIs(t, err, "Replace adding a finalizer, "+name, apistore.ErrDeleting, store.ErrInvalid)
		unchanged(t, s, before, marked, "a finalizer added after the mark, "+name)
	}
}

func removingLastFinalizerDeletes(t *testing.T, s *subject) {
	ctx := t.Context()
	marked := mark(t, s, "a", "one", "two")
	obj, deleted, err := s.layer.Replace(ctx, "a", doc(fin("two"), `{"n":1}`, ""), marked.Revision)
	require.NoError(t, err)
	require.False(t, deleted, "a finalizer is left")
	require.Equal(t, []string{"two"}, parse(t, obj.Value).Meta.Finalizers)
	require.NotNil(t, parse(t, obj.Value).Meta.Deletion)

	obj, deleted, err = s.layer.Replace(ctx, "a", doc(nil, `{"n":1}`, ""), obj.Revision)
	require.NoError(t, err)
	require.True(t, deleted, "the last finalizer removed deletes the object")
	require.Equal(t, revision(t, s), obj.Revision, "Replace returns the revision of the delete")
	require.Equal(t, marked.CreateRevision, obj.CreateRevision)
	gone(t, s, "a")

	// Update says nothing of it, but does the same.
	marked = mark(t, s, "b", "one")
	_, err = s.layer.Update(ctx, "b", doc(fin(), `{"n":1}`, ""), marked.Revision)
	require.NoError(t, err)
	gone(t, s, "b")
}

func removalRacesAWrite(t *testing.T, s *subject) {
	ctx := t.Context()
	marked := mark(t, s, "a", "cleanup")
	racing := doc(parse(t, marked.Value).metaPtr(), `{"n":1}`, `{"ready":"raced"}`)
	var raced int64
	var rerr error
	s.hook.afterGet("a", func() {
		obj, err := s.raw.Update(ctx, "a", racing, marked.Revision)
		raced, rerr = obj.Revision, err
	})
	_, deleted, err := s.layer.Replace(ctx, "a", doc(nil, `{"n":1}`, ""), marked.Revision)
	require.NoError(t, rerr, "the write between the layer's read and its delete")
	requireIs(t, err, "removing the last finalizer after a write in between", store.ErrConflict)
	require.False(t, deleted)
	obj, p := get(t, s, "a")
	require.Equal(t, raced, obj.Revision, "nothing is deleted")
	require.Equal(t, []string{"cleanup"}, p.Meta.Finalizers)
	require.Equal(t, jsonOf(t, `{"ready":"raced"}`), p.Status)
}

// metaPtr returns the parsed metadata, for a doc that keeps it.
func (p parsed) metaPtr() *apistore.Meta { return &p.Meta }
