package apistoretest

import (
	"encoding/json"
	"testing"

	"github.com/converge-go/converge/store/apistore"
	"github.com/stretchr/testify/require"
)

func createSetsGenerationOne(t *testing.T, s *subject) {
	md := &apistore.Meta{
		Generation: 7,
		Finalizers: []string{"cleanup"},
		Deletion:   &apistore.Deletion{Revision: 3, Propagation: apistore.Orphan},
		Owners:     []apistore.Owner{{Key: "parent", UID: 2, Block: true}},
	}
	obj := create(t, s, "a", doc(md, `{"n":1}`, `{"ready":true}`))
	got, p := get(t, s, "a")
	require.Equal(t, obj.Revision, got.Revision)
	require.JSONEq(t, string(obj.Value), string(got.Value), "Create returns the value as stored")
	require.Equal(t, apistore.Meta{
		Generation: 1,
		Finalizers: []string{"cleanup"},
		Owners:     []apistore.Owner{{Key: "parent", UID: 2, Block: true}},
	}, p.Meta, "generation 1, no mark, finalizers and owners as written")
	require.Equal(t, jsonOf(t, `{"n":1}`), p.Spec)
	require.Equal(t, jsonOf(t, `{"ready":true}`), p.Status)
}

// generation returns the generation stored at key.
func generation(t *testing.T, s *subject, key string) int64 {
	t.Helper()
	_, p := get(t, s, key)
	return p.Meta.Generation
}

func generationBumps(t *testing.T, s *subject) {
	ctx := t.Context()
	obj := create(t, s, "a", doc(nil, `{"replicas":3,"image":"app:1","ports":[80,443]}`, ""))
	steps := []struct {
		what string
		spec string
		want int64
	}{
		{"the same spec", `{"replicas":3,"image":"app:1","ports":[80,443]}`, 1},
		{"other member order and whitespace", "{ \"ports\" : [ 80 , 443 ] ,\n\t\"image\":\"app:1\", \"replicas\":3 }", 1},
		{"another spelling of the same numbers and strings", `{"replicas":3.0,"image":"app\u003a1","ports":[8e1,4.43E2]}`, 1},
		{"another number", `{"replicas":4,"image":"app:1","ports":[80,443]}`, 2},
		{"another order of an array", `{"replicas":4,"image":"app:1","ports":[443,80]}`, 3},
		{"a number float64 cannot tell from the last", `{"replicas":4,"image":"app:1","ports":[443,80],"id":9007199254740993}`, 4},
		{"the one it cannot tell it from", `{"replicas":4,"image":"app:1","ports":[443,80],"id":9007199254740992}`, 5},
	}
	for i, step := range steps {
		md := &apistore.Meta{Generation: 99} // ignored, whoever writes
		var err error
		if i%2 == 0 {
			obj, err = s.layer.Update(ctx, "a", doc(md, step.spec, ""), obj.Revision)
		} else {
			obj, _, err = s.layer.Replace(ctx, "a", doc(md, step.spec, ""), obj.Revision)
		}
		require.NoError(t, err, step.what)
		require.Equal(t, step.want, generation(t, s, "a"), step.what)
		require.Equal(t, step.want, parse(t, obj.Value).Meta.Generation, "%s: the object returned", step.what)
	}
	obj, err := s.layer.UpdateStatus(ctx, "a", doc(nil, `{"replicas":1}`, `{"ready":true}`), obj.Revision)
	require.NoError(t, err)
	require.Equal(t, int64(5), generation(t, s, "a"), "a status write keeps the generation")
	_, _, err = s.layer.DeleteWith(ctx, "a", obj.Revision, apistore.Foreground)
	require.NoError(t, err)
	require.Equal(t, int64(5), generation(t, s, "a"), "a mark keeps the generation")
}

func generationAfterRawWrites(t *testing.T, s *subject) {
	ctx := t.Context()
	obj := create(t, s, "a", doc(nil, `{"n":1}`, ""))
	// Another program writes the store below the layer: a new spec, and a
	// generation of its own.
	raw, err := s.raw.Update(ctx, "a", doc(&apistore.Meta{Generation: 50}, `{"n":2}`, ""), obj.Revision)
	require.NoError(t, err)
	require.Equal(t, int64(50), generation(t, s, "a"))

	obj, err = s.layer.Update(ctx, "a", doc(nil, `{"n":2}`, ""), raw.Revision)
	require.NoError(t, err)
	require.Equal(t, int64(50), generation(t, s, "a"), "the spec the raw write left, written again, is no change")
	obj, err = s.layer.Update(ctx, "a", doc(nil, `{"n":3}`, ""), obj.Revision)
	require.NoError(t, err)
	require.Equal(t, int64(51), generation(t, s, "a"), "a change from what the raw write left bumps it by one")

	raw, err = s.raw.Update(ctx, "a", doc(&apistore.Meta{Generation: 51}, `{"n":3}`, `{"ready":"raw"}`), obj.Revision)
	require.NoError(t, err)
	_, _, err = s.layer.Replace(ctx, "a", doc(nil, `{"n":4}`, ""), raw.Revision)
	require.NoError(t, err)
	_, p := get(t, s, "a")
	require.Equal(t, int64(52), p.Meta.Generation)
	require.Equal(t, jsonOf(t, `{"ready":"raw"}`), p.Status, "a spec write keeps the status a raw write left")
}

func statusKeepsSpec(t *testing.T, s *subject) {
	ctx := t.Context()
	md := &apistore.Meta{Finalizers: []string{"cleanup"}, Owners: []apistore.Owner{{Key: "parent", UID: 1}}}
	obj := create(t, s, "a", doc(md, `{"n":1}`, `{"ready":false}`))
	other := &apistore.Meta{Generation: 9, Finalizers: []string{"other"}}
	obj, err := s.layer.UpdateStatus(ctx, "a", doc(other, `{"n":2}`, `{"ready":true}`), obj.Revision)
	require.NoError(t, err)
	got, p := get(t, s, "a")
	require.Equal(t, obj.Revision, got.Revision)
	require.Equal(t, jsonOf(t, `{"n":1}`), p.Spec, "a status write keeps the spec")
	require.Equal(t, apistore.Meta{Generation: 1, Finalizers: md.Finalizers, Owners: md.Owners}, p.Meta, "a status write keeps the metadata")
	require.Equal(t, jsonOf(t, `{"ready":true}`), p.Status)

	marked := mark(t, s, "b", "cleanup")
	_, err = s.layer.UpdateStatus(ctx, "b", doc(nil, "", `{"progress":"half"}`), marked.Revision)
	require.NoError(t, err, "a status write to a marked object")
	_, p = get(t, s, "b")
	require.Equal(t, jsonOf(t, `{"progress":"half"}`), p.Status)
	require.Equal(t, []string{"cleanup"}, p.Meta.Finalizers)
}

func specKeepsStatus(t *testing.T, s *subject) {
	ctx := t.Context()
	obj := create(t, s, "a", json.RawMessage(`{"spec":{"n":1},"status":{"ready":true},"observedGeneration":1}`))
	obj, err := s.layer.Update(ctx, "a", []byte(`{"spec":{"n":2},"status":{"ready":false},"observedGeneration":7}`), obj.Revision)
	require.NoError(t, err)
	_, p := get(t, s, "a")
	require.Equal(t, jsonOf(t, `{"n":2}`), p.Spec)
	require.Equal(t, jsonOf(t, `{"ready":true}`), p.Status, "a spec write keeps the status")
	require.Equal(t, map[string]any{"observedGeneration": jsonOf(t, "1")}, p.Others, "every member but metadata and spec is status")

	_, _, err = s.layer.Replace(ctx, "a", []byte(`{"spec":{"n":3}}`), obj.Revision)
	require.NoError(t, err)
	_, p = get(t, s, "a")
	require.Equal(t, jsonOf(t, `{"ready":true}`), p.Status, "a spec write without status keeps it")
	require.Equal(t, map[string]any{"observedGeneration": jsonOf(t, "1")}, p.Others)
}
