package apistoretest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// gcFinalizers are the finalizer sets the propagation clauses start from:
// none, one of the layer's own, and each with a finalizer of the writer's.
var gcFinalizers = [][]string{
	nil,
	{"cleanup"},
	{apistore.ForegroundFinalizer},
	{apistore.OrphanFinalizer},
	{"cleanup", apistore.ForegroundFinalizer},
	{apistore.OrphanFinalizer, "cleanup"},
}

// deleteFrom creates key with finalizers had, deletes it with propagation
// p through delete, and requires what a deletion with p promises: the
// finalizers want, the object deleted if there are none, else marked
// with propagation wantP.
func deleteFrom(t *testing.T, s *subject, key string, had []string, p apistore.Propagation, want []string, wantP apistore.Propagation) {
	t.Helper()
	what := fmt.Sprintf("a %q delete of an object with finalizers %v", p, had)
	obj := create(t, s, key, doc(fin(had...), `{"n":1}`, ""))
	rev, marked, err := s.layer.DeleteWith(t.Context(), key, obj.Revision, p)
	require.NoError(t, err, what)
	if len(want) == 0 {
		require.False(t, marked, "%s deletes it", what)
		gone(t, s, key)
		return
	}
	require.True(t, marked, "%s marks it", what)
	got, parsed := get(t, s, key)
	require.Equal(t, rev, got.Revision, what)
	require.ElementsMatch(t, want, parsed.Meta.Finalizers, what)
	require.NotNil(t, parsed.Meta.Deletion, what)
	require.Equal(t, wantP, parsed.Meta.Deletion.Propagation, what)
}

// without returns finalizers without the layer's own.
func without(finalizers []string) []string {
	var out []string
	for _, f := range finalizers {
		if f != apistore.ForegroundFinalizer && f != apistore.OrphanFinalizer {
			out = append(out, f)
		}
	}
	return out
}

// explicitPropagationReplacesTheOther: Background, Foreground and Orphan
// each replace the garbage-collector finalizer the object carries by their
// own (none for Background), so no mark carries both, and a Background
// delete of an object whose only finalizer was the orphan one deletes it.
func explicitPropagationReplacesTheOther(t *testing.T, s *subject) {
	for _, p := range []apistore.Propagation{apistore.Background, apistore.Foreground, apistore.Orphan} {
		for i, had := range gcFinalizers {
			want := without(had)
			switch p {
			case apistore.Foreground:
				want = append(want, apistore.ForegroundFinalizer)
			case apistore.Orphan:
				want = append(want, apistore.OrphanFinalizer)
			}
			deleteFrom(t, s, fmt.Sprintf("%s/%d", p, i), had, p, want, p)
		}
	}
}

// noPropagationKeepsTheObjectsOwn: a delete that gives no propagation
// (DeleteWith with "", and Delete) keeps the finalizers, and the
// garbage-collector finalizer the object carries decides the propagation
// its mark records; with neither, it is Background.
func noPropagationKeepsTheObjectsOwn(t *testing.T, s *subject) {
	for i, had := range gcFinalizers {
		p := apistore.Background
		for _, f := range had {
			switch f {
			case apistore.ForegroundFinalizer:
				p = apistore.Foreground
			case apistore.OrphanFinalizer:
				p = apistore.Orphan
			}
		}
		deleteFrom(t, s, fmt.Sprintf("none/%d", i), had, "", had, p)
	}
	obj := create(t, s, "plain", doc(fin(apistore.OrphanFinalizer), `{"n":1}`, ""))
	rev, err := s.layer.Delete(t.Context(), "plain", obj.Revision)
	require.NoError(t, err, "Delete of an object with the orphan finalizer")
	got, parsed := get(t, s, "plain")
	require.Equal(t, rev, got.Revision)
	require.Equal(t, apistore.Orphan, parsed.Meta.Deletion.Propagation, "Delete keeps the object's own propagation")
	require.Equal(t, []string{apistore.OrphanFinalizer}, parsed.Meta.Finalizers)
}

// bothGCFinalizersAreRefused: a create or update listing both
// garbage-collector finalizers fails with store.ErrInvalid and writes
// nothing; an object written around the layer with both loses one at its
// deletion: the explicit propagation's, or with none given the first
// listed, decides.
func bothGCFinalizersAreRefused(t *testing.T, s *subject) {
	ctx := t.Context()
	both := doc(fin(apistore.OrphanFinalizer, apistore.ForegroundFinalizer), `{"n":1}`, "")
	before := revision(t, s)
	_, err := s.layer.Create(ctx, "a", both)
	requireIs(t, err, "a create with both finalizers", store.ErrInvalid)
	require.Equal(t, before, revision(t, s), "a create with both finalizers writes nothing")

	obj := create(t, s, "a", doc(fin(apistore.OrphanFinalizer), `{"n":1}`, ""))
	before = revision(t, s)
	_, err = s.layer.Update(ctx, "a", both, obj.Revision)
	requireIs(t, err, "an update to both finalizers", store.ErrInvalid)
	unchanged(t, s, before, obj, "an update to both finalizers")

	for i, tc := range []struct {
		p     apistore.Propagation
		had   []string
		want  []string
		wantP apistore.Propagation
	}{
		{"", []string{apistore.ForegroundFinalizer, "cleanup", apistore.OrphanFinalizer}, []string{apistore.ForegroundFinalizer, "cleanup"}, apistore.Foreground},
		{"", []string{apistore.OrphanFinalizer, apistore.ForegroundFinalizer}, []string{apistore.OrphanFinalizer}, apistore.Orphan},
		{apistore.Foreground, []string{apistore.OrphanFinalizer, apistore.ForegroundFinalizer}, []string{apistore.ForegroundFinalizer}, apistore.Foreground},
		{apistore.Background, []string{apistore.OrphanFinalizer, apistore.ForegroundFinalizer}, nil, ""},
	} {
		key := fmt.Sprintf("raw/%d", i)
		raw, err := s.raw.Create(ctx, key, doc(fin(tc.had...), `{"n":1}`, ""))
		require.NoError(t, err, "a raw create")
		rev, marked, err := s.layer.DeleteWith(ctx, key, raw.Revision, tc.p)
		require.NoError(t, err, "a %q delete of a raw object with finalizers %v", tc.p, tc.had)
		require.Equal(t, len(tc.want) > 0, marked, "a %q delete of a raw object with finalizers %v", tc.p, tc.had)
		if !marked {
			gone(t, s, key)
			continue
		}
		got, parsed := get(t, s, key)
		require.Equal(t, rev, got.Revision)
		require.ElementsMatch(t, tc.want, parsed.Meta.Finalizers, "a %q delete of a raw object with finalizers %v", tc.p, tc.had)
		require.Equal(t, tc.wantP, parsed.Meta.Deletion.Propagation)
	}
}

// aSecondDeleteKeepsThePropagationInForce: once marked, an object keeps
// the propagation and the finalizers of its first deletion, whatever
// propagation a later delete gives, and the later delete writes nothing.
func aSecondDeleteKeepsThePropagationInForce(t *testing.T, s *subject) {
	ctx := t.Context()
	for i, first := range []apistore.Propagation{apistore.Orphan, apistore.Foreground, apistore.Background} {
		key := fmt.Sprintf("second/%d", i)
		obj := create(t, s, key, doc(fin("cleanup"), `{"n":1}`, ""))
		rev, marked, err := s.layer.DeleteWith(ctx, key, obj.Revision, first)
		require.NoError(t, err)
		require.True(t, marked)
		markedObj, want := get(t, s, key)
		require.Equal(t, rev, markedObj.Revision)
		before := revision(t, s)
		for _, then := range []apistore.Propagation{"", apistore.Background, apistore.Foreground, apistore.Orphan} {
			again, marked, err := s.layer.DeleteWith(ctx, key, markedObj.Revision, then)
			what := fmt.Sprintf("a %q delete of an object marked with %q", then, first)
			require.NoError(t, err, what)
			require.True(t, marked, what)
			require.Equal(t, markedObj.Revision, again, what)
			unchanged(t, s, before, markedObj, what)
		}
		_, got := get(t, s, key)
		require.Equal(t, want.Meta.Deletion, got.Meta.Deletion)
		require.Equal(t, want.Meta.Finalizers, got.Meta.Finalizers)
	}
}
