package schema

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// validate adds to errs each way v (decoded with json.Number, at path)
// breaks s. It descends only where s has a schema, so its depth is s's.
func (s *Schema) validate(path string, v any, errs *fieldErrors) {
	if s == nil || errs.full() {
		return
	}
	if s.Type != "" && typeOf(v) != s.Type && !(s.Type == "number" && typeOf(v) == "integer") {
		errs.add(path, "want %s, got %s", article(s.Type), article(typeOf(v)))
		return
	}
	if len(s.enum) > 0 && !slices.ContainsFunc(s.enum, func(e any) bool { return equal(e, v) }) {
		errs.add(path, "want one of %s", enumText(s.Enum))
	}
	switch v := v.(type) {
	case map[string]any:
		s.validateObject(path, v, errs)
	case []any:
		s.validateArray(path, v, errs)
	case string:
		s.validateString(path, v, errs)
	case json.Number:
		s.validateNumber(path, v, errs)
	}
}

func (s *Schema) validateObject(path string, v map[string]any, errs *fieldErrors) {
	for _, name := range s.Required {
		if _, ok := v[name]; !ok {
			errs.add(fieldPath(path, name), "required")
		}
	}
	names := make([]string, 0, len(v))
	for name := range v {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if p, ok := s.Properties[name]; ok {
			p.validate(fieldPath(path, name), v[name], errs)
			continue
		}
		switch a := s.AdditionalProperties; {
		case a == nil || a.Allowed && a.Schema == nil:
		case a.Schema != nil:
			a.Schema.validate(fieldPath(path, name), v[name], errs)
		default:
			errs.add(fieldPath(path, name), "unknown field")
		}
	}
}

func (s *Schema) validateArray(path string, v []any, errs *fieldErrors) {
	if s.MinItems != nil && len(v) < *s.MinItems {
		errs.add(path, "want at least %d items, got %d", *s.MinItems, len(v))
	}
	if s.MaxItems != nil && len(v) > *s.MaxItems {
		errs.add(path, "want at most %d items, got %d", *s.MaxItems, len(v))
	}
	if s.Items == nil {
		return
	}
	for i, item := range v {
		s.Items.validate(path+"["+strconv.Itoa(i)+"]", item, errs)
	}
}

func (s *Schema) validateString(path, v string, errs *fieldErrors) {
	n := utf8.RuneCountInString(v)
	if s.MinLength != nil && n < *s.MinLength {
		errs.add(path, "want at least %d characters, got %d", *s.MinLength, n)
	}
	if s.MaxLength != nil && n > *s.MaxLength {
		errs.add(path, "want at most %d characters, got %d", *s.MaxLength, n)
	}
	if s.re != nil && !s.re.MatchString(v) {
		errs.add(path, "want a match of %q", s.Pattern)
	}
}

func (s *Schema) validateNumber(path string, v json.Number, errs *fieldErrors) {
	if s.Minimum == nil && s.Maximum == nil {
		return
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		errs.add(path, "number %.40s out of range", string(v))
		return
	}
	if s.Minimum != nil && f < *s.Minimum {
		errs.add(path, "want at least %s, got %.40s", bound(*s.Minimum), string(v))
	}
	if s.Maximum != nil && f > *s.Maximum {
		errs.add(path, "want at most %s, got %.40s", bound(*s.Maximum), string(v))
	}
}

// bound spells a minimum or maximum as its rules file does (2147483647,
// not 2.147483647e+09), in the shortest form that reads back the same.
func bound(f float64) string {
	if math.Abs(f) < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// typeOf returns the schema type of a decoded value.
func typeOf(v any) string {
	switch v := v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case json.Number:
		if strings.ContainsAny(string(v), ".eE") {
			return "number"
		}
		return "integer"
	case bool:
		return "boolean"
	}
	return "null"
}

func article(t string) string {
	switch t {
	case "object", "array", "integer":
		return "an " + t
	case "null":
		return "null"
	}
	return "a " + t
}

// equal reports whether two decoded values are the same JSON value,
// numbers by value.
func equal(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, av := range a {
			if bv, ok := b[k]; !ok || !equal(av, bv) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		return ok && slices.EqualFunc(a, b, equal)
	case json.Number:
		b, ok := b.(json.Number)
		if !ok {
			return false
		}
		fa, errA := strconv.ParseFloat(string(a), 64)
		fb, errB := strconv.ParseFloat(string(b), 64)
		return a == b || errA == nil && errB == nil && fa == fb
	}
	return a == b
}

// enumText returns the enum as written, bounded.
func enumText(enum []json.RawMessage) string {
	var b strings.Builder
	for i, e := range enum {
		if i > 0 {
			b.WriteString(", ")
		}
		if b.Len() > 200 {
			b.WriteString("...")
			break
		}
		b.Write(e)
	}
	return b.String()
}
