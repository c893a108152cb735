package apistore_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/stretchr/testify/require"
)

func spec(s string) json.RawMessage { return json.RawMessage(`{"spec":` + s + `}`) }

// SameSpec compares specs as JSON values: member order, whitespace,
// escapes and the spelling of numbers make no difference; anything that
// changes the value does, numbers float64 cannot tell apart included.
func TestJSONKindComparesSpecsAsJSONValues(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{`{"a":1,"b":[1,2]}`, "{ \"b\" : [1, 2],\n\t\"a\":1 }", true},
		{`1`, `1.0`, true},
		{`1`, `10e-1`, true},
		{`1`, `0.1E+1`, true},
		{`120`, `1.2e2`, true},
		{`0`, `-0.0e5`, true},
		{`1e400`, `10e399`, true},
		{`9007199254740993`, `9007199254740992`, false},
		{`0.1`, `0.10000000000000001`, false},
		{`1`, `-1`, false},
		{`"\u00e9"`, `"é"`, true},
		{`"\ud83d\ude00"`, `"😀"`, true},
		{`"\/"`, `"/"`, true},
		{`"\ud800"`, `"\ud801"`, false},
		{`"\ud800"`, `"\ufffd"`, false},
		{`"a"`, `"A"`, false},
		{`[1,2]`, `[2,1]`, false},
		{`{"a":1}`, `{"a":1,"b":null}`, false},
		{`true`, `"true"`, false},
		{`null`, `false`, false},
		{`{"\u0061":1}`, `{"a":1}`, true},
	} {
		same, err := apistore.JSONKind{}.SameSpec(spec(tc.a), spec(tc.b))
		require.NoError(t, err, "%s and %s", tc.a, tc.b)
		require.Equal(t, tc.same, same, "%s and %s", tc.a, tc.b)
	}
	same, err := apistore.JSONKind{}.SameSpec(json.RawMessage(`{}`), spec(`null`))
	require.NoError(t, err)
	require.True(t, same, "no spec is the spec null")
}

// A value that is not a JSON object, or whose metadata does not decode as
// Meta, fails every method of JSONKind with store.ErrInvalid.
func TestJSONKindRefusesWhatIsNoJSONObject(t *testing.T) {
	deep := strings.Repeat("[", 10001) + strings.Repeat("]", 10001)
	for name, v := range map[string]string{
		"empty":                     ``,
		"not JSON":                  `{"spec":`,
		"an array":                  `[]`,
		"a number":                  `1`,
		"data after the object":     `{} {}`,
		"a member twice":            `{"a":1,"a":2}`,
		"a member twice, escaped":   `{"a":1,"\u0061":2}`,
		"a nested member twice":     `{"spec":[{"a":1,"a":2}]}`,
		"invalid UTF-8":             "{\"a\":\"\xff\"}",
		"a control character":       "{\"a\":\"\x01\"}",
		"a bad escape":              `{"a":"\x"}`,
		"a leading zero":            `{"a":01}`,
		"a long exponent":           `{"a":1e1234567890123456789}`,
		"nested too deep":           `{"spec":` + deep + `}`,
		"a trailing comma":          `{"a":1,}`,
		"metadata not an object":    `{"metadata":[]}`,
		"metadata with a stranger":  `{"metadata":{"name":"x"}}`,
		"a generation not a number": `{"metadata":{"generation":"1"}}`,
		"a bad deletion time":       `{"metadata":{"deletion":{"revision":1,"time":"yesterday"}}}`,
	} {
		k := apistore.JSONKind{}
		raw := json.RawMessage(v)
		_, err := k.Meta(raw)
		require.ErrorIs(t, err, store.ErrInvalid, "Meta of %s", name)
		if strings.HasPrefix(name, "metadata") || strings.HasPrefix(name, "a generation") || strings.HasPrefix(name, "a bad deletion") {
			continue // the object itself is fine: only Meta reads metadata
		}
		_, err = k.WithMeta(raw, apistore.Meta{})
		require.ErrorIs(t, err, store.ErrInvalid, "WithMeta of %s", name)
		_, err = k.SameSpec(raw, json.RawMessage(`{}`))
		require.ErrorIs(t, err, store.ErrInvalid, "SameSpec of %s", name)
		_, err = k.Merge(json.RawMessage(`{}`), raw)
		require.ErrorIs(t, err, store.ErrInvalid, "Merge of %s", name)
	}
}

// WithMeta and Merge write metadata, spec, then the status members sorted
// by name, each without insignificant whitespace, so one object is one
// text whatever its order; Merge takes metadata and spec from its first
// argument and every other member from its second.
func TestJSONKindWritesMembersInOneOrder(t *testing.T) {
	k := apistore.JSONKind{}
	v, err := k.WithMeta(json.RawMessage(`{ "z":1, "spec": {"b": 2, "a": 1}, "metadata":{"generation":4}, "a" : [1, 2] }`), apistore.Meta{Generation: 2, Finalizers: []string{"f"}})
	require.NoError(t, err)
	require.Equal(t, `{"metadata":{"generation":2,"finalizers":["f"]},"spec":{"b":2,"a":1},"a":[1,2],"z":1}`, string(v))

	m, err := k.Merge(
		json.RawMessage(`{"status":"old","spec":{"n":2},"metadata":{"generation":3}}`),
		json.RawMessage(`{"spec":{"n":1},"metadata":{"generation":1},"status":"new","observed":1}`))
	require.NoError(t, err)
	require.Equal(t, `{"metadata":{"generation":3},"spec":{"n":2},"observed":1,"status":"new"}`, string(m))

	m, err = k.Merge(json.RawMessage(`{}`), json.RawMessage(`{"status":1}`))
	require.NoError(t, err)
	require.Equal(t, `{"status":1}`, string(m), "no metadata or spec on the spec side: none in the result")
}

// JSONKind never changes the values it is given: the in-memory store
// shares them with every reader.
func TestJSONKindNeverChangesItsArguments(t *testing.T) {
	k := apistore.JSONKind{}
	a := json.RawMessage(`{"metadata":{"finalizers":["f"]},"spec":{"n":1},"status":{"s":1}}`)
	b := json.RawMessage(`{"spec":{"n":2},"status":{"s":2},"x":3}`)
	before := [2]string{string(a), string(b)}
	m, err := k.Meta(a)
	require.NoError(t, err)
	m.Finalizers[0] = "changed"
	_, err = k.WithMeta(a, apistore.Meta{Generation: 5})
	require.NoError(t, err)
	_, err = k.SameSpec(a, b)
	require.NoError(t, err)
	_, err = k.Merge(a, b)
	require.NoError(t, err)
	require.Equal(t, before, [2]string{string(a), string(b)})
}
