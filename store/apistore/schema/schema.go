// Package schema is declarative admission for JSON objects: rules per key
// prefix, written as a small subset of JSON Schema (as a Kubernetes
// CustomResourceDefinition declares its schema), compiled into the
// apistore.Admission hooks the API-server layer runs where objects are
// written. The store server loads them from a file (convergestore -kinds);
// a program embeds the same file and passes Rules.Options to apistore.New,
// so the rules are written once.
//
//	{"kinds": [{"prefix": "roles/",
//	  "spec": {"type": "object", "required": ["login"],
//	    "additionalProperties": false,
//	    "properties": {
//	      "login": {"type": "boolean", "default": true},
//	      "connectionLimit": {"type": "integer", "minimum": -1}}},
//	  "status": {"type": "object"}}]}
//
// A kind's "spec" schema judges an object's "spec" member (an absent one
// as null) on every spec write, after its defaults are filled in; its
// "status" schema judges the "status" member, when there is one, on status
// writes and creates; its "name" schema judges, as a string, the key after
// the prefix of every object created (a Role's name, say:
// {"type": "string", "pattern": "^[a-z_][a-z0-9_]{0,62}$"}). Other top-level members and metadata are not judged
// here (the layer validates metadata itself).
//
// The keywords, with JSON Schema's meaning: type (object, array, string,
// integer, number, boolean, null; integer is a number written without a
// fraction or exponent), properties, required, additionalProperties (a
// boolean or a schema), items, minItems, maxItems, minimum, maximum
// (compared as float64), minLength, maxLength (in characters), pattern (Go
// regexp syntax, RE2: matched in linear time, unanchored), enum (numbers
// compared by value), default (filled into an object that lacks the
// property, and required to pass its own schema). Any other keyword is
// refused, not ignored.
//
// A kind may also declare printer columns ("columns": [{"name": "READY",
// "path": ".conditions[Ready].status"}, ...]): what a table of its objects
// shows (Column, Rules.ColumnsFor; convergectl get -o table). A store
// server declares its rules to its clients (httpstore.WithKinds).
//
// Bounds: a rules file of at most 1 MiB, schemas nested at most 32 deep,
// patterns of at most 1024 bytes; validation descends only where the
// schema does, and reports at most 20 fields. Nothing panics on any input;
// a fuzz test holds it to that.
package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// Bounds of rules.
const (
	MaxRulesSize = 1 << 20
	maxDepth     = 32
	maxPattern   = 1024
	maxErrors    = 20
)

// Rules are kind rules per key prefix.
type Rules struct {
	Kinds []Kind `json:"kinds"`
}

// Kind is the rules of the objects under a key prefix ("" for every key;
// the longest matching prefix wins).
type Kind struct {
	Prefix string `json:"prefix"`
	// Name judges, as a JSON string, the name of a key to create: the key
	// after Prefix (apistore.Admission.ValidateKey).
	Name   *Schema `json:"name,omitempty"`
	Spec   *Schema `json:"spec,omitempty"`
	Status *Schema `json:"status,omitempty"`
	// Columns are what a table of the kind's objects shows after the key
	// (convergectl get -o table), as kubectl get shows a
	// CustomResourceDefinition's printer columns.
	Columns []Column `json:"columns,omitempty"`
}

// Schema is a JSON value's rule; see the package doc for the keywords.
// A nil or zero Schema admits every value.
type Schema struct {
	Type                 string             `json:"type,omitempty"`
	Properties           map[string]*Schema `json:"properties,omitempty"`
	Required             []string           `json:"required,omitempty"`
	AdditionalProperties *Additional        `json:"additionalProperties,omitempty"`
	Items                *Schema            `json:"items,omitempty"`
	MinItems             *int               `json:"minItems,omitempty"`
	MaxItems             *int               `json:"maxItems,omitempty"`
	Minimum              *float64           `json:"minimum,omitempty"`
	Maximum              *float64           `json:"maximum,omitempty"`
	MinLength            *int               `json:"minLength,omitempty"`
	MaxLength            *int               `json:"maxLength,omitempty"`
	Pattern              string             `json:"pattern,omitempty"`
	Enum                 []json.RawMessage  `json:"enum,omitempty"`
	Default              json.RawMessage    `json:"default,omitempty"`

	re      *regexp.Regexp // Pattern, compiled by Parse
	enum    []any          // Enum, decoded by Parse
	deflt   any            // Default, decoded by Parse
	hasDflt bool
}

// Additional is additionalProperties: false refuses members that
// properties does not name, a schema judges them; true (the default)
// admits them.
type Additional struct {
	Allowed bool
	Schema  *Schema
}

// UnmarshalJSON reads a boolean or a schema.
func (a *Additional) UnmarshalJSON(data []byte) error {
	if b := bytes.TrimSpace(data); bytes.Equal(b, []byte("true")) || bytes.Equal(b, []byte("false")) {
		a.Allowed = b[0] == 't'
		return nil
	}
	a.Allowed = true
	return strictDecode(data, &a.Schema)
}

// MarshalJSON writes a boolean, or the schema.
func (a Additional) MarshalJSON() ([]byte, error) {
	if a.Schema != nil {
		return json.Marshal(a.Schema)
	}
	return json.Marshal(a.Allowed)
}

var types = map[string]bool{"": true, "object": true, "array": true, "string": true, "integer": true, "number": true, "boolean": true, "null": true}

// Parse reads rules from a JSON text and checks them: unknown keywords,
// bad types, patterns that do not compile, defaults that fail their own
// schema, a prefix twice, and anything past the bounds fail with an error
// matching store.ErrInvalid that names the place.
func Parse(data []byte) (*Rules, error) {
	if len(data) > MaxRulesSize {
		return nil, fmt.Errorf("%w: schema: rules of %d bytes, more than %d", store.ErrInvalid, len(data), MaxRulesSize)
	}
	var r Rules
	if err := strictDecode(data, &r); err != nil {
		return nil, fmt.Errorf("%w: schema: %v", store.ErrInvalid, err)
	}
	seen := map[string]bool{}
	for i, k := range r.Kinds {
		if seen[k.Prefix] {
			return nil, fmt.Errorf("%w: schema: kinds[%d]: prefix %q is given twice", store.ErrInvalid, i, k.Prefix)
		}
		seen[k.Prefix] = true
		for name, s := range map[string]*Schema{"name": k.Name, "spec": k.Spec, "status": k.Status} {
			if err := s.compile(name, 0); err != nil {
				return nil, fmt.Errorf("%w: schema: kinds[%d] (%q): %v", store.ErrInvalid, i, k.Prefix, err)
			}
		}
		for j, c := range k.Columns {
			if err := c.check(); err != nil {
				return nil, fmt.Errorf("%w: schema: kinds[%d] (%q): columns[%d]: %v", store.ErrInvalid, i, k.Prefix, j, err)
			}
		}
	}
	return &r, nil
}

// strictDecode decodes data into v, refusing unknown members and data
// after the value.
func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the rules")
	}
	return nil
}

// compile checks s (at path, depth deep) and its children, and fills in
// what validation uses: the compiled pattern, the decoded enum and
// default.
func (s *Schema) compile(path string, depth int) error {
	if s == nil {
		return nil
	}
	if depth >= maxDepth {
		return fmt.Errorf("%s: schemas nested more than %d deep", path, maxDepth)
	}
	if !types[s.Type] {
		return fmt.Errorf("%s: unknown type %q", path, s.Type)
	}
	if err := s.compileOwn(path); err != nil {
		return err
	}
	for name, p := range s.Properties {
		if err := p.compile(fieldPath(path, name), depth+1); err != nil {
			return err
		}
	}
	if err := s.Items.compile(path+"[]", depth+1); err != nil {
		return err
	}
	if s.AdditionalProperties != nil {
		if err := s.AdditionalProperties.Schema.compile(path+".*", depth+1); err != nil {
			return err
		}
	}
	return s.compileDefault(path)
}

// compileOwn checks s's own keywords.
func (s *Schema) compileOwn(path string) error {
	for _, n := range []*int{s.MinItems, s.MaxItems, s.MinLength, s.MaxLength} {
		if n != nil && *n < 0 {
			return fmt.Errorf("%s: a negative bound", path)
		}
	}
	if len(s.Pattern) > maxPattern {
		return fmt.Errorf("%s: a pattern of %d bytes, more than %d", path, len(s.Pattern), maxPattern)
	}
	if s.Pattern != "" {
		re, err := regexp.Compile(s.Pattern)
		if err != nil {
			return fmt.Errorf("%s: pattern: %v", path, err)
		}
		s.re = re
	}
	s.enum = nil
	for i, e := range s.Enum {
		v, err := decode(e)
		if err != nil {
			return fmt.Errorf("%s: enum[%d]: %v", path, i, err)
		}
		s.enum = append(s.enum, v)
	}
	return nil
}

// compileDefault decodes s's default and requires it to pass s.
func (s *Schema) compileDefault(path string) error {
	if s.Default == nil {
		return nil
	}
	v, err := decode(s.Default)
	if err != nil {
		return fmt.Errorf("%s: default: %v", path, err)
	}
	var errs fieldErrors
	s.validate(path, v, &errs)
	if len(errs.list) > 0 {
		return fmt.Errorf("%s: the default does not pass its schema: %v", path, errs.err())
	}
	s.deflt, s.hasDflt = v, true
	return nil
}

// decode decodes one JSON value, numbers as json.Number.
func decode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("data after the value")
	}
	return v, nil
}

// fieldPath returns the path of member name of the value at path.
func fieldPath(path, name string) string {
	if isIdent(name) {
		return path + "." + name
	}
	return fmt.Sprintf("%s[%q]", path, name)
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	return strings.IndexFunc(s, func(r rune) bool {
		return !(r == '_' || r == '-' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	}) < 0
}

// fieldErrors collects a value's field errors, up to maxErrors.
type fieldErrors struct {
	list []error
	more int
}

func (e *fieldErrors) add(field, format string, args ...any) {
	if len(e.list) >= maxErrors {
		e.more++
		return
	}
	e.list = append(e.list, apistore.FieldErrorf(field, format, args...))
}

func (e *fieldErrors) full() bool { return len(e.list) >= maxErrors }

// err returns the errors joined, or nil.
func (e *fieldErrors) err() error {
	if e.more > 0 {
		return errors.Join(append(e.list, fmt.Errorf("and %d more", e.more))...)
	}
	return errors.Join(e.list...)
}
