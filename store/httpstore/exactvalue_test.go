package httpstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore/httpstoretest"
	"github.com/stretchr/testify/require"
)

// doc is a struct value type for the exactness tests: typed fields, an
// omitempty one, a nested object and a free-form map.
type doc struct {
	Name  string         `json:"name"`
	Count int64          `json:"count,omitempty"`
	Ratio float64        `json:"ratio"`
	Tags  []string       `json:"tags,omitempty"`
	Meta  map[string]any `json:"meta,omitempty"`
	Inner *inner         `json:"inner,omitempty"`
	Flag  bool           `json:"flag"`
}

type inner struct {
	A int    `json:"a"`
	B string `json:"b,omitempty"`
}

// exactTargets serves each value type (map, struct) over each kind of
// backend: Go values in memory (the handler encodes with the codec), and
// JSON bytes (a View: the handler encodes with encoding/json and the store
// checks too).
func exactTargets(t testing.TB) []*exactTarget {
	t.Helper()
	return append(typedTargets[map[string]any](t, "map"), typedTargets[doc](t, "struct")...)
}

func typedTargets[T any](t testing.TB, typ string) []*exactTarget {
	t.Helper()
	m, raw := store.NewMemory[T](), store.NewMemory[[]byte]()
	t.Cleanup(func() { _ = m.Close(); _ = raw.Close() })
	var out []*exactTarget
	for backend, s := range map[string]store.Store[T]{"memory": m, "view": store.NewView[T](raw, store.JSON[T]{})} {
		c := httpstoretest.Serve(t, s, httpstoretest.Options{})
		rev := func() (int64, error) { return s.Revision(context.Background()) }
		get := func(key string) ([]byte, error) {
			obj, err := c.Get(context.Background(), key)
			if err != nil {
				return nil, err
			}
			return json.Marshal(obj.Value)
		}
		out = append(out, &exactTarget{name: typ + "/" + backend, typ: typ, url: c.Server.URL, rev: rev, get: get, model: model[T]})
	}
	return out
}

// exactTarget is a served store: its URL, its revision, and a Get through
// a Client that returns the JSON of the value it read, the model of what
// a body is stored as, and the number of the last key create wrote.
type exactTarget struct {
	name  string
	typ   string // "map" or "struct"
	url   string
	rev   func() (int64, error)
	get   func(key string) ([]byte, error)
	model func(body []byte) ([]byte, error)
	next  int
}

// model is what the stored value of a body should encode as, by plain
// encoding/json: the body decoded into a T and encoded again, or an error
// if it does not decode or is a value no store takes (nil).
func model[T any](body []byte) ([]byte, error) {
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, err
	}
	if err := store.ValidateValue(v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// revision returns the served store's revision.
func (tg *exactTarget) revision(t *testing.T) int64 {
	t.Helper()
	rev, err := tg.rev()
	require.NoError(t, err)
	return rev
}

// create posts body as a new key's value and returns the key and the
// answer's status and error code.
func (tg *exactTarget) create(t *testing.T, body []byte) (key string, status int, code string) {
	t.Helper()
	tg.next++
	key = fmt.Sprintf("k%d", tg.next)
	req, err := http.NewRequest(http.MethodPost, tg.url+"/v1/create?key="+key, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	status, code = do(t, req)
	return key, status, code
}

func TestValuesTheServerWouldNotGiveBackExactlyAreRefusedAndWriteNothing(t *testing.T) {
	targets := exactTargets(t)
	for _, tc := range []struct{ name, body, types string }{
		{"an integer beyond 2^53", `{"n":9007199254740993}`, "map"},
		{"a lone surrogate", `{"name":"\ud800"}`, "both"},
		{"a lone low surrogate", `{"name":"x\udc00"}`, "both"},
		{"a high surrogate before a non-surrogate escape", `{"name":"\ud800\u0041"}`, "both"},
		{"a duplicate member", `{"name":"a","name":"b"}`, "both"},
		{"a duplicate nested member", `{"meta":{"x":{"a":1,"a":1}}}`, "both"},
		{"a duplicate member in an array", `{"meta":{"l":[{"a":1,"a":2}]}}`, "both"},
		{"a number too small for a float64", `{"ratio":1e-400}`, "both"},
		{"more digits than a float64 holds", `{"ratio":0.1000000000000000000001}`, "both"},
		{"an unknown field", `{"name":"a","nmae":"b"}`, "struct"},
		{"a name matched without regard to case", `{"NAME":"a"}`, "struct"},
		{"two names one field matches", `{"name":"a","Name":"b"}`, "struct"},
		{"an unknown nested field", `{"inner":{"a":1,"c":2}}`, "struct"},
		{"an unknown object that is not empty", `{"extra":{"a":0}}`, "struct"},
		{"null stored as a zero in an array", `{"tags":[null]}`, "struct"},
		{"null for the whole value", `null`, "struct"},
	} {
		for _, tg := range targets {
			if tc.types != "both" && tc.types != tg.typ {
				continue
			}
			before := tg.revision(t)
			_, status, code := tg.create(t, []byte(tc.body))
			require.Equal(t, http.StatusBadRequest, status, "%s on %s: %s", tc.name, tg.name, tc.body)
			require.Equal(t, "invalid", code, "%s on %s", tc.name, tg.name)
			require.Equal(t, before, tg.revision(t), "%s on %s: a refused value was written", tc.name, tg.name)
		}
	}
}

func TestValuesWrittenInAnotherFormOfTheSameJSONAreAccepted(t *testing.T) {
	targets := exactTargets(t)
	for _, tc := range []struct{ name, body, types string }{
		{"exponents and trailing zeros", `{"ratio":1.0e2,"meta":{"x":1.50,"y":-0,"z":12.5E-1}}`, "both"},
		{"escapes of plain characters and a surrogate pair", `{"name":"\u0041\/\u00e9\ud83d\ude00\\ud800"}`, "both"},
		{"members in another order", `{"flag":true,"name":"a","ratio":2}`, "both"},
		{"a 2^53 integer", `{"meta":{"n":9007199254740992}}`, "both"},
		{"zeros of dropped fields", `{"name":"a","unknown":null,"x":false,"y":0,"z":"","l":[],"o":{},"count":0,"tags":[],"Ratio":0.0e5}`, "struct"},
		{"fields left out", `{}`, "struct"},
		{"a nested object left partly out", `{"inner":{}}`, "struct"},
		{"null for a field", `{"name":null,"inner":null}`, "struct"},
		{"null in a map", `{"meta":{"l":[null],"n":null}}`, "both"},
	} {
		for _, tg := range targets {
			if tc.types != "both" && tc.types != tg.typ {
				continue
			}
			key, status, code := tg.create(t, []byte(tc.body))
			require.Equal(t, http.StatusCreated, status, "%s on %s: %s (%s)", tc.name, tg.name, tc.body, code)
			got, err := tg.get(key)
			require.NoError(t, err)
			require.True(t, refSameJSON([]byte(tc.body), got), "%s on %s: %s read back as %s", tc.name, tg.name, tc.body, got)
		}
	}
}
