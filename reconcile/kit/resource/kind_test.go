package resource

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

type anyRes = Resource[map[string]any, string]

// TestKindSharesNothingWithTheValuesItReads: the metadata Kind returns
// and the copies it makes share no slice or pointer with the values they
// came from, since values read from a store may be shared with it.
func TestKindSharesNothingWithTheValuesItReads(t *testing.T) {
	k := Kind[map[string]any, string]{}
	v := &anyRes{Meta: apistore.Meta{Generation: 3, Finalizers: []string{"a"}, Owners: []apistore.Owner{{Key: "o", UID: 1}},
		Deletion: &apistore.Deletion{Revision: 4, Time: time.Unix(5, 0)}}, Status: "s"}
	m, err := k.Meta(v)
	require.NoError(t, err)
	m.Finalizers[0], m.Owners[0].Key, m.Deletion.Revision = "changed", "changed", 9
	require.Equal(t, "a", v.Finalizers[0])
	require.Equal(t, "o", v.Owners[0].Key)
	require.Equal(t, int64(4), v.Deletion.Revision)

	w, err := k.WithMeta(v, apistore.Meta{Generation: 7, Finalizers: []string{"b"}})
	require.NoError(t, err)
	require.Equal(t, int64(7), w.Generation)
	require.Equal(t, int64(3), v.Generation, "WithMeta changed its argument")
	require.Equal(t, "s", w.Status)
}

// TestKindTellsSpecFromStatus: SameSpec compares specs alone, as the store
// keeps them (a number read back from JSON is the same spec), and Merge
// takes the spec and metadata of one value and the status of another.
func TestKindTellsSpecFromStatus(t *testing.T) {
	k := Kind[map[string]any, string]{}
	a := &anyRes{Spec: map[string]any{"n": 1}, Status: "old"}
	b := &anyRes{Spec: map[string]any{"n": float64(1)}, Status: "new", ObservedGeneration: 4}
	same, err := k.SameSpec(a, b)
	require.NoError(t, err)
	require.True(t, same, "1 and 1.0 are one spec once stored as JSON")
	c := &anyRes{Spec: map[string]any{"n": 2}}
	same, err = k.SameSpec(a, c)
	require.NoError(t, err)
	require.False(t, same)

	a.Finalizers = []string{"f"}
	b.Conditions = []Condition{{Type: "Ready", Status: ConditionTrue}}
	m, err := k.Merge(a, b)
	require.NoError(t, err)
	require.Equal(t, a.Spec, m.Spec)
	require.Equal(t, []string{"f"}, m.Finalizers)
	require.Equal(t, "new", m.Status)
	require.Equal(t, int64(4), m.ObservedGeneration)
	require.Equal(t, b.Conditions, m.Conditions)
	require.Equal(t, "old", a.Status, "Merge changed its argument")

	_, err = k.Meta(nil)
	require.ErrorIs(t, err, store.ErrInvalid)
	_, err = k.Merge(nil, b)
	require.ErrorIs(t, err, store.ErrInvalid)
}

// TestAResourceIsAJSONDocumentOfTheLayersShape: a Resource encodes as
// {"metadata":...,"spec":...,...}, the shape a store server that does not
// know its Go type reads.
func TestAResourceIsAJSONDocumentOfTheLayersShape(t *testing.T) {
	v := &anyRes{Meta: apistore.Meta{Generation: 2, Finalizers: []string{"f"}}, Spec: map[string]any{"n": 1.0}, Status: "s"}
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var doc map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &doc))
	require.Contains(t, doc, "metadata")
	require.Contains(t, doc, "spec")
	var m apistore.Meta
	require.NoError(t, json.Unmarshal(doc["metadata"], &m))
	require.Equal(t, v.Meta, m)
}
