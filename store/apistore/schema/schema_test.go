package schema_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/apistore/schema"
	"github.com/stretchr/testify/require"
)

const roleRules = `{"kinds": [{"prefix": "roles/",
  "spec": {"type": "object", "required": ["name"], "additionalProperties": false,
    "properties": {
      "name": {"type": "string", "minLength": 1, "maxLength": 63, "pattern": "^[a-z_][a-z0-9_]*$"},
      "login": {"type": "boolean", "default": true},
      "connectionLimit": {"type": "integer", "minimum": -1, "maximum": 2147483647, "default": -1},
      "mode": {"type": "string", "enum": ["fast", "safe"]},
      "members": {"type": "array", "maxItems": 2, "items": {"type": "object",
        "properties": {"role": {"type": "string"}, "admin": {"type": "boolean", "default": false}}}}}},
  "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}}]}`

func layer(t *testing.T, rules string) *apistore.Store[json.RawMessage] {
	t.Helper()
	r, err := schema.Parse([]byte(rules))
	require.NoError(t, err)
	s, err := apistore.New[json.RawMessage](store.NewMemory[json.RawMessage](), apistore.JSONKind{}, r.Options()...)
	require.NoError(t, err)
	return s
}

// TestTheRulesRefuseABadSpecNamingEachFieldAndStoreNothing: every keyword
// refuses what it should, with the field's path in the error.
func TestTheRulesRefuseABadSpecNamingEachFieldAndStoreNothing(t *testing.T) {
	s := layer(t, roleRules)
	for spec, field := range map[string]string{
		`{}`:                                "spec.name: required",
		`{"name":"Bad"}`:                    "spec.name: want a match",
		`{"name":""}`:                       "spec.name: want at least 1 characters",
		`{"name":"a","login":"yes"}`:        "spec.login: want a boolean",
		`{"name":"a","connectionLimit":-2}`: "spec.connectionLimit: want at least -1,",
		`{"name":"a","connectionLimit":99999999999}`: "spec.connectionLimit: want at most 2147483647, got 99999999999",
		`{"name":"a","connectionLimit":1.5}`:         "spec.connectionLimit: want an integer",
		`{"name":"a","connectionLimit":1e999}`:       "spec.connectionLimit: want an integer",
		`{"name":"a","mode":"slow"}`:                 "spec.mode: want one of",
		`{"name":"a","extra":1}`:                     "spec.extra: unknown field",
		`{"name":"a","members":[{},{},{}]}`:          "spec.members: want at most 2 items",
		`{"name":"a","members":[{"role":7}]}`:        "spec.members[0].role: want a string",
		`{"name":"` + strings.Repeat("a", 64) + `"}`: "spec.name: want at most 63 characters",
		`[1]`: "spec: want an object",
	} {
		_, err := s.Create(t.Context(), "roles/r", json.RawMessage(`{"spec":`+spec+`}`))
		require.ErrorIs(t, err, apistore.ErrRejected, spec)
		require.ErrorIs(t, err, store.ErrInvalid, spec)
		require.Contains(t, err.Error(), field, spec)
		var fe *apistore.FieldError
		require.True(t, errors.As(err, &fe), "%s: a FieldError is found", spec)
	}
	_, err := s.Create(t.Context(), "roles/r", json.RawMessage(`{"metadata":{}}`))
	require.ErrorContains(t, err, "spec: want an object, got null", "an absent spec is null")
	_, err = s.Get(t.Context(), "roles/r")
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = s.Create(t.Context(), "others/r", json.RawMessage(`{"spec":[1]}`))
	require.NoError(t, err, "a key under no prefix is of no rule")
}

// TestTheRulesFillDefaultsIntoTheSpecAndItsNestedObjects: an absent
// property with a default gets it, in objects at any depth the schema
// describes; a property given keeps its value.
func TestTheRulesFillDefaultsIntoTheSpecAndItsNestedObjects(t *testing.T) {
	s := layer(t, roleRules)
	obj, err := s.Create(t.Context(), "roles/r", json.RawMessage(`{"spec":{"name":"app","login":false,"members":[{"role":"x"},{"role":"y","admin":true}]},"status":{"ready":true}}`))
	require.NoError(t, err)
	var got struct{ Spec, Status any }
	require.NoError(t, json.Unmarshal(obj.Value, &got))
	var want struct{ Spec, Status any }
	require.NoError(t, json.Unmarshal([]byte(`{"spec":{"name":"app","login":false,"connectionLimit":-1,"members":[{"role":"x","admin":false},{"role":"y","admin":true}]},"status":{"ready":true}}`), &want))
	require.Equal(t, want, got)
}

// TestTheStatusRuleJudgesStatusWrites: a status write whose status breaks
// the kind's status schema is refused naming the field.
func TestTheStatusRuleJudgesStatusWrites(t *testing.T) {
	s := layer(t, roleRules)
	obj, err := s.Create(t.Context(), "roles/r", json.RawMessage(`{"spec":{"name":"app"}}`))
	require.NoError(t, err, "a create without status")
	_, err = s.UpdateStatus(t.Context(), "roles/r", json.RawMessage(`{"status":{"ready":1}}`), obj.Revision)
	require.ErrorIs(t, err, apistore.ErrRejected)
	require.ErrorContains(t, err, "status.ready: want a boolean")
	_, err = s.UpdateStatus(t.Context(), "roles/r", json.RawMessage(`{"status":{"ready":true}}`), obj.Revision)
	require.NoError(t, err)
}

// TestParseRefusesRulesItCannotKeepNamingThePlace: unknown keywords and
// types, bad patterns and bounds, defaults that fail their schema, a
// prefix twice, too deep or too large rules.
func TestParseRefusesRulesItCannotKeepNamingThePlace(t *testing.T) {
	deep := strings.Repeat(`{"items":`, 40) + `{}` + strings.Repeat(`}`, 40)
	for rules, want := range map[string]string{
		`{"kinds":[{"prefix":"a/","spec":{"format":"email"}}]}`:                                    "unknown field",
		`{"kinds":[{"prefix":"a/","spec":{"type":"int"}}]}`:                                        `unknown type "int"`,
		`{"kinds":[{"prefix":"a/","spec":{"pattern":"("}}]}`:                                       "spec: pattern",
		`{"kinds":[{"prefix":"a/","spec":{"minLength":-1}}]}`:                                      "negative bound",
		`{"kinds":[{"prefix":"a/","spec":{"properties":{"n":{"type":"integer","default":"x"}}}}]}`: "spec.n: the default does not pass",
		`{"kinds":[{"prefix":"a/"},{"prefix":"a/"}]}`:                                              "given twice",
		`{"kinds":[{"prefix":"a/","spec":` + deep + `}]}`:                                          "nested more than",
		`{"kinds":[]} {}`: "after",
		`{"kinds":[{"prefix":"a/","spec":{"enum":[1,]}}]}`: "invalid character",
	} {
		_, err := schema.Parse([]byte(rules))
		require.ErrorIs(t, err, store.ErrInvalid, rules)
		require.ErrorContains(t, err, want, rules)
	}
	_, err := schema.Parse(make([]byte, schema.MaxRulesSize+1))
	require.ErrorIs(t, err, store.ErrInvalid)
}

// TestRulesPrintAsTheyParse: rules written back are the rules read, so a
// program can print the rules it embeds for the store server.
func TestRulesPrintAsTheyParse(t *testing.T) {
	r, err := schema.Parse([]byte(roleRules))
	require.NoError(t, err)
	out, err := json.Marshal(r)
	require.NoError(t, err)
	require.JSONEq(t, roleRules, string(out))
}

// typedRole is a Go type of the roles/ kind, and typedKind its Kind: its
// spec is Spec, and it has no status.
type typedRole struct {
	apistore.Meta `json:"metadata"`
	Spec          struct {
		Name  string `json:"name"`
		Login *bool  `json:"login,omitempty"`
	} `json:"spec"`
}

type typedKind struct{}

func (typedKind) Meta(v typedRole) (apistore.Meta, error) { return v.Meta, nil }
func (typedKind) WithMeta(v typedRole, m apistore.Meta) (typedRole, error) {
	v.Meta = m
	return v, nil
}
func (typedKind) SameSpec(a, b typedRole) (bool, error) {
	return a.Spec.Name == b.Spec.Name && (a.Spec.Login == nil) == (b.Spec.Login == nil), nil
}
func (typedKind) Merge(spec, _ typedRole) (typedRole, error) { return spec, nil }

// TestTypedValuesAreJudgedAndDefaultedThroughTheirJSON: a layer of Go
// values with OptionsOf refuses a bad spec naming the field and stores
// the defaults the JSON rules fill in.
func TestTypedValuesAreJudgedAndDefaultedThroughTheirJSON(t *testing.T) {
	r, err := schema.Parse([]byte(roleRules))
	require.NoError(t, err)
	s, err := apistore.New[typedRole](store.NewMemory[typedRole](), typedKind{}, schema.OptionsOf[typedRole](r)...)
	require.NoError(t, err)
	bad := typedRole{}
	bad.Spec.Name = "Bad"
	_, err = s.Create(t.Context(), "roles/r", bad)
	require.ErrorIs(t, err, apistore.ErrRejected)
	require.ErrorContains(t, err, "spec.name")
	good := typedRole{}
	good.Spec.Name = "good"
	obj, err := s.Create(t.Context(), "roles/r", good)
	require.NoError(t, err)
	require.NotNil(t, obj.Value.Spec.Login, "the default is filled in")
	require.True(t, *obj.Value.Spec.Login)
}

// TestTheNameRuleRefusesAKeyToCreateNamingIt: a kind's "name" schema
// judges the key after the prefix of every object created, in JSON and
// typed layers alike: a name it refuses fails naming "name", and nothing
// is stored; a name it admits is created. A name schema that does not
// compile stops Parse, naming the place.
func TestTheNameRuleRefusesAKeyToCreateNamingIt(t *testing.T) {
	const rules = `{"kinds":[{"prefix":"roles/","name":{"type":"string","pattern":"^[a-z_][a-z0-9_]{0,62}$"}}]}`
	r, err := schema.Parse([]byte(rules))
	require.NoError(t, err)
	s := layer(t, rules)
	typed, err := apistore.New[typedRole](store.NewMemory[typedRole](), typedKind{}, schema.OptionsOf[typedRole](r)...)
	require.NoError(t, err)
	for _, key := range []string{"roles/Bad", "roles/x;drop", "roles/"} {
		_, err := s.Create(t.Context(), key, json.RawMessage(`{"spec":{}}`))
		require.ErrorIs(t, err, apistore.ErrRejected, key)
		require.ErrorContains(t, err, "name: want a match", key)
		var fe *apistore.FieldError
		require.True(t, errors.As(err, &fe), key)
		require.Equal(t, "name", fe.Field)
		_, err = s.Get(t.Context(), key)
		require.ErrorIs(t, err, store.ErrNotFound, key)
		_, err = typed.Create(t.Context(), key, typedRole{})
		require.ErrorIs(t, err, apistore.ErrRejected, "typed: %s", key)
	}
	_, err = s.Create(t.Context(), "roles/app", json.RawMessage(`{"spec":{}}`))
	require.NoError(t, err)
	_, err = s.Create(t.Context(), "others/Bad", json.RawMessage(`{"spec":{}}`))
	require.NoError(t, err, "a key under no prefix is of no rule")

	_, err = schema.Parse([]byte(`{"kinds":[{"prefix":"roles/","name":{"pattern":"("}}]}`))
	require.ErrorIs(t, err, store.ErrInvalid)
	require.ErrorContains(t, err, "name")
}
