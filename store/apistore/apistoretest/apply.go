package apistoretest

import (
	"encoding/json"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/stretchr/testify/require"
)

// The clauses of Apply: it changes only what the applied document states.

// apply applies d at key through the layer, failing t if it cannot.
func apply(t *testing.T, s *subject, key string, d json.RawMessage) store.Object[json.RawMessage] {
	t.Helper()
	obj, err := s.layer.Apply(t.Context(), key, d)
	require.NoError(t, err, "Apply(%q, %s)", key, d)
	return obj
}

// controllerWrites creates key as a controller leaves it: its finalizer,
// an owner and a status.
func controllerWrites(t *testing.T, s *subject, key string) store.Object[json.RawMessage] {
	t.Helper()
	md := &apistore.Meta{Finalizers: []string{"ctl/cleanup"}, Owners: []apistore.Owner{{Key: "schedules/nightly", UID: 1}}}
	return create(t, s, key, doc(md, `{"n":1}`, `{"ready":true}`))
}

func specOnlyApplyKeeps(t *testing.T, s *subject) {
	controllerWrites(t, s, "a")
	obj := apply(t, s, "a", doc(nil, `{"n":2}`, `{"forged":true}`))
	got, p := get(t, s, "a")
	require.Equal(t, got.Revision, obj.Revision)
	require.JSONEq(t, string(got.Value), string(obj.Value), "Apply returns the value as stored")
	require.Equal(t, []string{"ctl/cleanup"}, p.Meta.Finalizers, "a spec-only apply keeps the controller's finalizer")
	require.Equal(t, []apistore.Owner{{Key: "schedules/nightly", UID: 1}}, p.Meta.Owners, "and its owner")
	require.Equal(t, int64(2), p.Meta.Generation, "the spec changed")
	require.Equal(t, jsonOf(t, `{"n":2}`), p.Spec)
	require.Equal(t, jsonOf(t, `{"ready":true}`), p.Status, "the document's status is never written")

	empty := &apistore.Meta{Finalizers: []string{}, Owners: []apistore.Owner{}}
	apply(t, s, "a", doc(empty, `{"n":2}`, ""))
	_, p = get(t, s, "a")
	require.Equal(t, []string{"ctl/cleanup"}, p.Meta.Finalizers, "an apply naming no finalizer removes none")
	require.Equal(t, []apistore.Owner{{Key: "schedules/nightly", UID: 1}}, p.Meta.Owners, "an apply naming no owner removes none")
	require.Equal(t, int64(2), p.Meta.Generation, "the same spec")
}

func applyAddsWhatItNames(t *testing.T, s *subject) {
	controllerWrites(t, s, "a")
	md := &apistore.Meta{
		Finalizers: []string{"user/audit", "ctl/cleanup"},
		Owners:     []apistore.Owner{{Key: "apps/web", UID: 4}, {Key: "schedules/nightly", UID: 1, Block: true}},
	}
	apply(t, s, "a", doc(md, "", ""))
	_, p := get(t, s, "a")
	require.Equal(t, []string{"ctl/cleanup", "user/audit"}, p.Meta.Finalizers, "the stored finalizers, then the new ones")
	require.Equal(t, []apistore.Owner{{Key: "schedules/nightly", UID: 1, Block: true}, {Key: "apps/web", UID: 4}}, p.Meta.Owners,
		"an owner named replaces the stored one of its key; a new one is added")
	require.Equal(t, jsonOf(t, `{"n":1}`), p.Spec, "a document without a spec keeps the stored one")
	require.Equal(t, int64(1), p.Meta.Generation, "no spec change")
	require.Equal(t, jsonOf(t, `{"ready":true}`), p.Status)
}

func applyNeverCompletesADeletion(t *testing.T, s *subject) {
	ctx := t.Context()
	marked := mark(t, s, "a", "ctl/cleanup")
	want := parse(t, marked.Value).Meta.Deletion
	for _, d := range []json.RawMessage{
		doc(nil, `{"n":2}`, ""),
		doc(&apistore.Meta{Finalizers: []string{}}, `{"n":3}`, ""),
		doc(fin("ctl/cleanup"), `{"n":4}`, ""),
	} {
		obj := apply(t, s, "a", d)
		got, p := get(t, s, "a")
		require.Equal(t, got.Revision, obj.Revision, "%s: the object stays", d)
		require.Equal(t, []string{"ctl/cleanup"}, p.Meta.Finalizers, "%s: the last finalizer stays", d)
		require.Equal(t, want, p.Meta.Deletion, "%s: the mark stays", d)
		require.Equal(t, marked.CreateRevision, got.CreateRevision)
	}
	before := revision(t, s)
	cur, _ := get(t, s, "a")
	_, err := s.layer.Apply(ctx, "a", doc(fin("ctl/cleanup", "user/late"), `{"n":5}`, ""))
	requireIs(t, err, "an apply adding a finalizer to a marked object", apistore.ErrDeleting, store.ErrInvalid)
	unchanged(t, s, before, cur, "an apply adding a finalizer to a marked object")
}

func applyCreates(t *testing.T, s *subject) {
	md := &apistore.Meta{Generation: 9, Finalizers: []string{"user/audit"}, Deletion: &apistore.Deletion{Revision: 1}}
	obj := apply(t, s, "a", doc(md, `{"n":1}`, `{"forged":true}`))
	got, p := get(t, s, "a")
	require.Equal(t, got.Revision, obj.Revision)
	require.Equal(t, got.Revision, got.CreateRevision, "created")
	require.Equal(t, apistore.Meta{Generation: 1, Finalizers: []string{"user/audit"}}, p.Meta, "generation 1, no mark")
	require.Equal(t, jsonOf(t, `{"n":1}`), p.Spec)
	require.Nil(t, p.Status, "an apply writes no status, even creating")
	require.Empty(t, p.Others)
}

func applyRetriesAConflict(t *testing.T, s *subject) {
	ctx := t.Context()
	obj := controllerWrites(t, s, "a")
	s.hook.afterGet("a", func() {
		late := doc(&apistore.Meta{Generation: 1, Finalizers: []string{"ctl/cleanup", "ctl/late"}}, `{"n":1}`, `{"ready":false}`)
		_, _ = s.raw.Update(ctx, "a", late, obj.Revision) // checked below
	})
	apply(t, s, "a", doc(fin("user/audit"), `{"n":2}`, ""))
	_, p := get(t, s, "a")
	require.Equal(t, []string{"ctl/cleanup", "ctl/late", "user/audit"}, p.Meta.Finalizers,
		"the write that slipped in is kept, and the apply made over it")
	require.Equal(t, jsonOf(t, `{"n":2}`), p.Spec)
	require.Equal(t, jsonOf(t, `{"ready":false}`), p.Status)
}

func applyRefusesBadDocuments(t *testing.T, s *subject) {
	ctx := t.Context()
	obj := controllerWrites(t, s, "a")
	before := revision(t, s)
	for what, d := range map[string]json.RawMessage{
		"no JSON object":       json.RawMessage(`[1]`),
		"unreadable metadata":  json.RawMessage(`{"metadata":{"finalizers":"x"},"spec":{}}`),
		"an empty finalizer":   doc(fin(""), `{}`, ""),
		"an owner without UID": doc(&apistore.Meta{Owners: []apistore.Owner{{Key: "p"}}}, `{}`, ""),
	} {
		_, err := s.layer.Apply(ctx, "a", d)
		requireIs(t, err, what, store.ErrInvalid)
		unchanged(t, s, before, obj, what)
		_, err = s.layer.Apply(ctx, "b", d)
		requireIs(t, err, what+" (absent key)", store.ErrInvalid)
		require.Equal(t, before, revision(t, s), "%s: nothing is created", what)
	}
}
