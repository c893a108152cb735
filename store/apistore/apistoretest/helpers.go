package apistoretest

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/stretchr/testify/require"
)

// doc returns a value of metadata md (no member if nil), and spec and
// status given as JSON texts (no member if "").
func doc(md *apistore.Meta, spec, status string) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	add := func(name string, v []byte) {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + name + `":`)
		b.Write(v)
	}
	if md != nil {
		m, err := json.Marshal(md)
		if err != nil {
			panic(err) // a Meta of the suite's own always encodes
		}
		add("metadata", m)
	}
	if spec != "" {
		add("spec", []byte(spec))
	}
	if status != "" {
		add("status", []byte(status))
	}
	b.WriteByte('}')
	return b.Bytes()
}

// fin returns metadata that lists finalizers.
func fin(finalizers ...string) *apistore.Meta { return &apistore.Meta{Finalizers: finalizers} }

// parsed is a stored value, decoded for comparison: numbers as written
// (json.Number), so that nothing is rounded.
type parsed struct {
	Meta   apistore.Meta
	Spec   any
	Status any // the status member
	Others map[string]any
}

// parse decodes v as the suite's values are shaped.
func parse(t *testing.T, v json.RawMessage) parsed {
	t.Helper()
	m, err := apistore.JSONKind{}.Meta(v)
	require.NoError(t, err, "metadata of %s", v)
	members := map[string]any{}
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&members), "stored value %s", v)
	p := parsed{Meta: m, Spec: members["spec"], Status: members["status"], Others: map[string]any{}}
	for name, mv := range members {
		if name != "metadata" && name != "spec" && name != "status" {
			p.Others[name] = mv
		}
	}
	return p
}

// jsonOf decodes a JSON text as parse decodes members.
func jsonOf(t *testing.T, text string) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v), "JSON text %s", text)
	return v
}

// get reads key through the layer, failing t if it cannot.
func get(t *testing.T, s *subject, key string) (store.Object[json.RawMessage], parsed) {
	t.Helper()
	obj, err := s.layer.Get(t.Context(), key)
	require.NoError(t, err, "Get(%q)", key)
	return obj, parse(t, obj.Value)
}

// create creates key through the layer, failing t if it cannot.
func create(t *testing.T, s *subject, key string, v json.RawMessage) store.Object[json.RawMessage] {
	t.Helper()
	obj, err := s.layer.Create(t.Context(), key, v)
	require.NoError(t, err, "Create(%q)", key)
	return obj
}

// mark creates key with finalizers and deletes it, which marks it; it
// returns the object as marked.
func mark(t *testing.T, s *subject, key string, finalizers ...string) store.Object[json.RawMessage] {
	t.Helper()
	obj := create(t, s, key, doc(fin(finalizers...), `{"n":1}`, `{"ready":false}`))
	rev, marked, err := s.layer.DeleteWith(t.Context(), key, obj.Revision, apistore.Background)
	require.NoError(t, err, "DeleteWith(%q)", key)
	require.True(t, marked, "the delete of an object with finalizers marks it")
	got, _ := get(t, s, key)
	require.Equal(t, rev, got.Revision, "DeleteWith returns the revision of the mark")
	return got
}

// gone requires key to be absent.
func gone(t *testing.T, s *subject, key string) {
	t.Helper()
	_, err := s.layer.Get(t.Context(), key)
	requireIs(t, err, "Get of a deleted key", store.ErrNotFound)
}

// revision returns the store's revision.
func revision(t *testing.T, s *subject) int64 {
	t.Helper()
	rev, err := s.layer.Revision(t.Context())
	require.NoError(t, err)
	return rev
}

// unchanged requires that the store is still at revision want and key
// still holds obj: nothing was written.
func unchanged(t *testing.T, s *subject, want int64, obj store.Object[json.RawMessage], what string) {
	t.Helper()
	require.Equal(t, want, revision(t, s), "%s: nothing is written", what)
	got, _ := get(t, s, obj.Key)
	require.Equal(t, obj.Revision, got.Revision, "%s: the object is untouched", what)
	require.JSONEq(t, string(obj.Value), string(got.Value), "%s: the object is untouched", what)
}

// requireIs requires err to match every target.
func requireIs(t *testing.T, err error, what string, targets ...error) {
	t.Helper()
	for _, target := range targets {
		if !errors.Is(err, target) {
			t.Fatalf("%s: got error %v, want one matching %v", what, err, target)
		}
	}
}
