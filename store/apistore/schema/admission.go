package schema

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/converge-go/converge/store/apistore"
)

// Options returns the layer's options that register every kind's
// Admission, for apistore.New.
func (r *Rules) Options() []apistore.Option[json.RawMessage] {
	if r == nil {
		return nil
	}
	var opts []apistore.Option[json.RawMessage]
	for _, k := range r.Kinds {
		opts = append(opts, apistore.WithAdmission(k.Prefix, k.Admission()))
	}
	return opts
}

// Admission returns the kind's hooks: Default fills the spec schema's
// defaults into the "spec" member, Validate judges it, ValidateStatus
// judges the "status" member, ValidateKey judges the name of a key to
// create. A Kind not from Parse has no compiled
// patterns, enums or defaults: parse rules before using them.
func (k Kind) Admission() apistore.Admission[json.RawMessage] {
	a := apistore.Admission[json.RawMessage]{}
	if k.Spec != nil {
		spec := k.Spec
		a.Default = func(v json.RawMessage) (json.RawMessage, error) { return fillDefaults(spec, v) }
		a.Validate = func(v json.RawMessage) error { return judge(spec, "spec", v, true) }
	}
	if k.Status != nil {
		status := k.Status
		a.ValidateStatus = func(v json.RawMessage) error { return judge(status, "status", v, false) }
	}
	if k.Name != nil {
		name, prefix := k.Name, k.Prefix
		a.ValidateKey = func(key string) error {
			var errs fieldErrors
			name.validate("name", strings.TrimPrefix(key, prefix), &errs)
			return errs.err()
		}
	}
	return a
}

// members decodes the top-level members of an object.
func members(v json.RawMessage) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(v, &m); err != nil || m == nil {
		return nil, apistore.FieldErrorf("", "not a JSON object")
	}
	return m, nil
}

// judge validates the member name of v by s; an absent member is null if
// absentIsNull, else not judged.
func judge(s *Schema, name string, v json.RawMessage, absentIsNull bool) error {
	m, err := members(v)
	if err != nil {
		return err
	}
	raw, ok := m[name]
	if !ok && !absentIsNull {
		return nil
	}
	var value any
	if ok {
		if value, err = decode(raw); err != nil {
			return apistore.FieldErrorf(name, "%v", err)
		}
	}
	var errs fieldErrors
	s.validate(name, value, &errs)
	return errs.err()
}

// fillDefaults returns v with the defaults of s filled into its "spec"
// member; v itself if there is none to fill.
func fillDefaults(s *Schema, v json.RawMessage) (json.RawMessage, error) {
	m, err := members(v)
	if err != nil {
		return v, err
	}
	raw, ok := m["spec"]
	if !ok {
		return v, nil
	}
	spec, err := decode(raw)
	if err != nil {
		return v, apistore.FieldErrorf("spec", "%v", err)
	}
	if !s.fill(spec) {
		return v, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(spec); err != nil {
		return v, apistore.FieldErrorf("spec", "%v", err)
	}
	m["spec"] = bytes.TrimSpace(buf.Bytes())
	buf.Reset()
	if err := enc.Encode(m); err != nil {
		return v, apistore.FieldErrorf("spec", "%v", err)
	}
	return bytes.TrimSpace(buf.Bytes()), nil
}

// fill sets, in every object of v that s describes, each absent property
// that has a default to a copy of it, and reports whether it set any. It
// descends only where s does.
func (s *Schema) fill(v any) bool {
	if s == nil {
		return false
	}
	changed := false
	switch v := v.(type) {
	case map[string]any:
		names := make([]string, 0, len(s.Properties))
		for name := range s.Properties {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			p := s.Properties[name]
			if _, ok := v[name]; !ok && p.hasDflt {
				v[name] = clone(p.deflt)
				changed = true
			}
			if p.fill(v[name]) {
				changed = true
			}
		}
		if a := s.AdditionalProperties; a != nil && a.Schema != nil {
			for name, item := range v {
				if _, named := s.Properties[name]; !named && a.Schema.fill(item) {
					changed = true
				}
			}
		}
	case []any:
		for _, item := range v {
			if s.Items.fill(item) {
				changed = true
			}
		}
	}
	return changed
}

// clone returns a deep copy of a decoded value.
func clone(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, item := range v {
			out[k] = clone(item)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, item := range v {
			out[i] = clone(item)
		}
		return out
	}
	return v
}
