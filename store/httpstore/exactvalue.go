package httpstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/converge-go/converge/store"
)

// sameValue returns nil if body, a value as a client sent it, and again,
// the codec's encoding of what the handler decoded from it, are the same
// JSON value, so that the store keeps what was sent; else an error
// matching store.ErrInvalid that says where they part.
//
// The same JSON value means: no duplicate member names in either, no
// escaped lone surrogate (which encoding/json reads as U+FFFD), numbers
// equal as exact decimals (1.0 is 1 and 1e2 is 100, 9007199254740993 is
// not 9007199254740992), the same strings, arrays element by element, and
// objects member by member in any order. A member only one side has is
// accepted if its value is one a reader cannot tell from its absence: in
// the body, JSON's zero (null, false, 0, "", [] or {}), which decoding
// dropped (an unknown field, a name matched without regard to case, an
// omitempty field); in the encoding, a zero all the way down (an object
// whose members are all such zeros too), which the type writes for a
// field the body left out. A member null in the body where the encoding
// has such a zero is accepted too, as Go decodes it (but not a null
// element of an array, nor a null value).
//
// It costs a scan of the body (scan), which is all for a body that is
// byte for byte its encoding (what a Go client sends); any other costs a
// scan of the encoding, a decode of both and a walk of the trees.
func sameValue(body, again []byte) error {
	if err := scan(body); err != nil {
		return err
	}
	if bytes.Equal(body, again) {
		return nil
	}
	if err := scan(again); err != nil {
		return fmt.Errorf("%w: the value as it would be stored: %w", store.ErrInvalid, err)
	}
	b, err := decodeTree(body)
	if err != nil {
		return err
	}
	a, err := decodeTree(again)
	if err != nil {
		return err
	}
	if path, why := compare(b, a); why != "" {
		return fmt.Errorf("%w: the value would not be stored as sent: at %s: %s", store.ErrInvalid, pathString(path), why)
	}
	return nil
}

// decodeTree decodes a JSON text that scan passed into nil, bool, string,
// json.Number, []any and map[string]any.
func decodeTree(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: the value: %v", store.ErrInvalid, err)
	}
	return v, nil
}

// compare returns "" if b (from the body) and a (from the encoding) are
// the same value as sameValue means it, else why not and the path, from
// the innermost member or index out.
func compare(b, a any) (path []string, why string) {
	switch bv := b.(type) {
	case map[string]any:
		if av, ok := a.(map[string]any); ok {
			return compareObjects(bv, av)
		}
	case []any:
		if av, ok := a.([]any); ok {
			return compareArrays(bv, av)
		}
	case json.Number:
		if av, ok := a.(json.Number); ok && sameNumber(bv, av) {
			return nil, ""
		}
	default: // nil, bool, string
		if b == a {
			return nil, ""
		}
	}
	return nil, fmt.Sprintf("%s would be stored as %s", show(b), show(a))
}

func compareArrays(b, a []any) (path []string, why string) {
	if len(b) != len(a) {
		return nil, fmt.Sprintf("%d elements would be stored as %d", len(b), len(a))
	}
	for i := range b {
		if path, why := compare(b[i], a[i]); why != "" {
			return append(path, "["+strconv.Itoa(i)+"]"), why
		}
	}
	return nil, ""
}

// compareObjects compares member by member; a member one side lacks, or
// null in the body, stands for a zero (see sameValue).
func compareObjects(b, a map[string]any) (path []string, why string) {
	for name, bv := range b {
		av, ok := a[name]
		switch {
		case !ok && !zero(bv):
			return []string{member(name)}, fmt.Sprintf("%s would be dropped (an unknown field, or a name matched without regard to case?)", show(bv))
		case !ok, bv == nil && deepZero(av):
			continue
		}
		if path, why := compare(bv, av); why != "" {
			return append(path, member(name)), why
		}
	}
	for name, av := range a {
		if _, ok := b[name]; !ok && !deepZero(av) {
			return []string{member(name)}, fmt.Sprintf("absent, it would be stored as %s", show(av))
		}
	}
	return nil, ""
}

// zero reports whether v is JSON's zero: null, false, 0, "", [] or {}.
func zero(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case string:
		return x == ""
	case json.Number:
		d, err := parseDecimal(string(x))
		return err == nil && d.digits == ""
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

// deepZero reports whether v is zero or an object of deep zeros.
func deepZero(v any) bool {
	obj, ok := v.(map[string]any)
	if !ok {
		return zero(v)
	}
	for _, m := range obj {
		if !deepZero(m) {
			return false
		}
	}
	return true
}

// show writes a parsed value for a message, shortened.
func show(v any) string {
	var s string
	switch x := v.(type) {
	case nil:
		s = "null"
	case json.Number:
		s = string(x)
	case string:
		s = strconv.Quote(x)
	case map[string]any:
		s = fmt.Sprintf("an object of %d members", len(x))
	case []any:
		s = fmt.Sprintf("an array of %d elements", len(x))
	default:
		s = fmt.Sprint(x) // bool
	}
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}

// member is a path's segment for an object's member: .name, or ."name"
// quoted if it is not a plain identifier.
func member(name string) string {
	for i, c := range name {
		if c != '_' && !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return "." + strconv.Quote(name)
		}
	}
	if name == "" {
		return `.""`
	}
	return "." + name
}

// pathString joins a path built innermost first; the value itself is ".".
func pathString(path []string) string {
	if len(path) == 0 {
		return "."
	}
	var b strings.Builder
	for i := len(path) - 1; i >= 0; i-- {
		b.WriteString(path[i])
	}
	return b.String()
}

// sameNumber reports whether two JSON numbers are equal as decimals.
func sameNumber(x, y json.Number) bool {
	if x == y {
		return true
	}
	dx, err := parseDecimal(string(x))
	if err != nil {
		return false
	}
	dy, err := parseDecimal(string(y))
	return err == nil && dx == dy
}

// decimal is a JSON number as an exact decimal: the value is
// 0.digits × 10^exp, negated if neg, where digits has no leading or
// trailing zero; zero is the empty digits (its sign does not count).
type decimal struct {
	neg    bool
	digits string
	exp    int64
}

// maxExponent bounds the exponent a number may be written with.
const maxExponent = 1 << 40

// parseDecimal reads a well-formed JSON number.
func parseDecimal(s string) (decimal, error) {
	var d decimal
	d.neg = strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, exp, hasExp := strings.Cut(strings.ToLower(s), "e")
	if hasExp {
		e, err := strconv.ParseInt(exp, 10, 64)
		if err != nil || e > maxExponent || e < -maxExponent {
			return d, fmt.Errorf("number %s: exponent out of range", s)
		}
		d.exp = e
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	intPart = strings.TrimLeft(intPart, "0")
	d.exp += int64(len(intPart))
	if intPart == "" {
		trimmed := strings.TrimLeft(frac, "0")
		d.exp -= int64(len(frac) - len(trimmed))
		frac = trimmed
	}
	d.digits = strings.TrimRight(intPart+frac, "0")
	if d.digits == "" {
		return decimal{}, nil
	}
	return d, nil
}
