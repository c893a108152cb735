package apistoretest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/storetest"
	"github.com/stretchr/testify/require"
)

// writes are the layer's writes of an existing key at a revision, by name.
func writes(ctx context.Context, s *subject, key string, v json.RawMessage, rev int64) map[string]func() error {
	return map[string]func() error{
		"Update":       func() error { _, err := s.layer.Update(ctx, key, v, rev); return err },
		"Replace":      func() error { _, _, err := s.layer.Replace(ctx, key, v, rev); return err },
		"UpdateStatus": func() error { _, err := s.layer.UpdateStatus(ctx, key, v, rev); return err },
		"Delete":       func() error { _, err := s.layer.Delete(ctx, key, rev); return err },
		"DeleteWith":   func() error { _, _, err := s.layer.DeleteWith(ctx, key, rev, apistore.Orphan); return err },
	}
}

func compareAndSwap(t *testing.T, s *subject) {
	ctx := t.Context()
	first := create(t, s, "a", doc(fin("cleanup"), `{"n":1}`, ""))
	obj, err := s.layer.Update(ctx, "a", doc(fin("cleanup"), `{"n":2}`, ""), first.Revision)
	require.NoError(t, err)
	before := revision(t, s)
	for _, rev := range []int64{first.Revision, obj.Revision + 100} {
		for name, write := range writes(ctx, s, "a", doc(nil, `{"n":3}`, ""), rev) {
			requireIs(t, write(), name+" at another revision", store.ErrConflict)
			unchanged(t, s, before, obj, name+" at another revision")
		}
	}
	for name, write := range writes(ctx, s, "missing", doc(nil, `{"n":3}`, ""), obj.Revision) {
		requireIs(t, write(), name+" of a missing key", store.ErrNotFound)
		require.Equal(t, before, revision(t, s), "%s of a missing key writes nothing", name)
	}
}

func watchSeesMarkAndRemoval(t *testing.T, s *subject) {
	ctx := t.Context()
	obj := create(t, s, "a", doc(fin("cleanup"), `{"n":1}`, ""))
	w, err := s.layer.Watch(ctx, "", obj.Revision)
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	rev, _, err := s.layer.DeleteWith(ctx, "a", obj.Revision, apistore.Background)
	require.NoError(t, err)
	ev := storetest.NextEvent(t, w)
	require.Equal(t, store.Updated, ev.Type, "the mark")
	require.Equal(t, rev, ev.Object.Revision)
	require.NotNil(t, parse(t, ev.Object.Value).Meta.Deletion)

	gone, deleted, err := s.layer.Replace(ctx, "a", doc(nil, `{"n":1}`, ""), rev)
	require.NoError(t, err)
	require.True(t, deleted)
	ev = storetest.NextEvent(t, w)
	require.Equal(t, store.Deleted, ev.Type, "the removal of the last finalizer")
	require.Equal(t, gone.Revision, ev.Object.Revision)
	last := parse(t, ev.Object.Value)
	require.Equal(t, []string{"cleanup"}, last.Meta.Finalizers, "the Deleted event carries the marked object as stored")
	require.NotNil(t, last.Meta.Deletion)
}

func memberOrder(t *testing.T, s *subject) {
	a := create(t, s, "a", json.RawMessage(`{"status":{"x":1},"spec":{"n":1,"m":[1,2]},"metadata":{"finalizers":["f"]},"extra":2}`))
	b := create(t, s, "b", json.RawMessage("{ \"extra\" : 2, \"metadata\":{\"finalizers\": [\"f\"]},\n\"spec\":{\"n\": 1, \"m\": [1, 2]},\"status\":{ \"x\":1} }"))
	require.Equal(t, string(a.Value), string(b.Value), "Create returns one text")
	ga, _ := get(t, s, "a")
	gb, _ := get(t, s, "b")
	require.Equal(t, string(ga.Value), string(gb.Value), "the store holds one text")
}

func identityIsStable(t *testing.T, s *subject) {
	ctx := t.Context()
	id, err := s.layer.Identity(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, id)
	if below, ok := s.raw.(store.Identifier); ok {
		raw, err := below.Identity(ctx)
		require.NoError(t, err)
		require.Equal(t, raw, id, "the layer's identity is the store's")
	}
	obj := create(t, s, "a", doc(nil, `{"n":1}`, ""))
	_, err = s.layer.Delete(ctx, "a", obj.Revision)
	require.NoError(t, err)
	again, err := s.layer.Identity(ctx)
	require.NoError(t, err)
	require.Equal(t, id, again, "an emptied store keeps its identity")
}

// badValueCases are values of no JSON object kind, or with metadata that
// does not decode as Meta.
var badValueCases = map[string]json.RawMessage{
	"nil":                       nil,
	"not JSON":                  json.RawMessage(`{"spec":`),
	"an array":                  json.RawMessage(`[1,2]`),
	"a string":                  json.RawMessage(`"text"`),
	"invalid UTF-8":             json.RawMessage("{\"spec\":\"\xff\"}"),
	"a member twice":            json.RawMessage(`{"spec":1,"spec":2}`),
	"a nested member twice":     json.RawMessage(`{"spec":{"a":1,"a":2}}`),
	"metadata not an object":    json.RawMessage(`{"metadata":5}`),
	"a generation not a number": json.RawMessage(`{"metadata":{"generation":"one"}}`),
	"a member Meta has not":     json.RawMessage(`{"metadata":{"labels":{}}}`),
	"an empty finalizer":        json.RawMessage(`{"metadata":{"finalizers":[""]}}`),
	"an owner without a key":    json.RawMessage(`{"metadata":{"owners":[{"key":"","uid":1}]}}`),
}

func badValues(t *testing.T, s *subject) {
	ctx := t.Context()
	obj := create(t, s, "a", doc(fin("cleanup"), `{"n":1}`, ""))
	before := revision(t, s)
	for name, v := range badValueCases {
		_, err := s.layer.Create(ctx, "new", v)
		requireIs(t, err, "Create of "+name, store.ErrInvalid)
		for op, write := range writes(ctx, s, "a", v, obj.Revision) {
			if op == "Delete" || op == "DeleteWith" {
				continue // no value
			}
			requireIs(t, write(), op+" of "+name, store.ErrInvalid)
		}
		unchanged(t, s, before, obj, "writes of "+name)
	}

	// A value written below the layer that is not of the kind: the
	// layer's writes refuse it rather than guess.
	raw, err := s.raw.Create(ctx, "raw", json.RawMessage(`[1,2]`))
	require.NoError(t, err)
	before = revision(t, s)
	for op, write := range writes(ctx, s, "raw", doc(nil, `{"n":1}`, ""), raw.Revision) {
		requireIs(t, write(), op+" over a stored value of no kind", store.ErrInvalid)
		require.Equal(t, before, revision(t, s), "%s over a stored value of no kind writes nothing", op)
	}
}
