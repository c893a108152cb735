package httpstore

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/converge-go/converge/internal/exactjson"
	"github.com/converge-go/converge/store"
)

// sameValue returns nil if body, a value as a client sent it, and again,
// the codec's encoding of what the handler decoded from it, are the same
// JSON value, so that the store keeps what was sent; else an error
// matching store.ErrInvalid that says where they part.
//
// The same JSON value means: both exact JSON (internal/exactjson: no
// duplicate member names, no escaped lone surrogate, which encoding/json
// reads as U+FFFD), numbers equal as exact decimals (1.0 is 1 and 1e2 is
// 100, 9007199254740993 is not 9007199254740992), the same strings, arrays
// element by element, and objects member by member in any order. A member
// only one side has is accepted if its value is one a reader cannot tell
// from its absence: in the body, JSON's zero (null, false, 0, "", [] or
// {}), which decoding dropped (an unknown field, a name matched without
// regard to case, an omitempty field); in the encoding, a zero all the way
// down (an object whose members are all such zeros too), which the type
// writes for a field the body left out. A member null in the body where
// the encoding has such a zero is accepted too, as Go decodes it (but not
// a null element of an array, nor a null value).
//
// It costs a check of the body, which is all for a body that is byte for
// byte its encoding (what a Go client sends); any other costs a parse of
// both and a walk of the trees.
func sameValue(body, again []byte) error {
	if bytes.Equal(body, again) {
		return exact(exactjson.Check(body))
	}
	b, err := exactjson.Parse(body)
	if err != nil {
		return exact(err)
	}
	a, err := exactjson.Parse(again)
	if err != nil {
		return fmt.Errorf("%w: the value as it would be stored: %w", store.ErrInvalid, exact(err))
	}
	if path, why := compare(b, a); why != "" {
		return fmt.Errorf("%w: the value would not be stored as sent: at %s: %s", store.ErrInvalid, pathString(path), why)
	}
	return nil
}

// exact words an error of exactjson for a client, nil as nil.
func exact(err error) error {
	if err == nil {
		return nil
	}
	var e *exactjson.Error
	switch {
	case !errors.As(err, &e):
		return fmt.Errorf("%w: the value: %v", store.ErrInvalid, err)
	case e.Problem == exactjson.Duplicate:
		return fmt.Errorf("%w: the value: member %q appears twice in an object (JSON keeps one of them)", store.ErrInvalid, e.Name)
	case e.Problem == exactjson.LoneSurrogate:
		return fmt.Errorf("%w: the value holds an escaped lone surrogate (\\u%04x), which would be stored as U+FFFD", store.ErrInvalid, e.Unit)
	}
	return fmt.Errorf("%w: the value: %v", store.ErrInvalid, e)
}

// compare returns "" if b (from the body) and a (from the encoding) are
// the same value as sameValue means it, else why not and the path, from
// the innermost member or index out.
func compare(b, a exactjson.Value) (path []string, why string) {
	switch {
	case b.Kind != a.Kind:
	case b.Kind == exactjson.Object:
		return compareObjects(b.Members, a.Members)
	case b.Kind == exactjson.Array:
		return compareArrays(b.Items, a.Items)
	case b.Text == a.Text: // a number's canonical decimal, a string's text
		return nil, ""
	}
	return nil, fmt.Sprintf("%s would be stored as %s", show(b), show(a))
}

func compareArrays(b, a []exactjson.Value) (path []string, why string) {
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
func compareObjects(b, a map[string]exactjson.Value) (path []string, why string) {
	for name, bv := range b {
		av, ok := a[name]
		switch {
		case !ok && !zero(bv):
			return []string{member(name)}, fmt.Sprintf("%s would be dropped (an unknown field, or a name matched without regard to case?)", show(bv))
		case !ok, bv.Kind == exactjson.Null && deepZero(av):
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
func zero(v exactjson.Value) bool {
	switch v.Kind {
	case exactjson.Null, exactjson.False:
		return true
	case exactjson.Number:
		return v.Text == "0"
	case exactjson.String:
		return v.Text == ""
	case exactjson.Array:
		return len(v.Items) == 0
	case exactjson.Object:
		return len(v.Members) == 0
	}
	return false
}

// deepZero reports whether v is zero or an object of deep zeros.
func deepZero(v exactjson.Value) bool {
	if v.Kind != exactjson.Object {
		return zero(v)
	}
	for _, m := range v.Members {
		if !deepZero(m) {
			return false
		}
	}
	return true
}

// show writes a parsed value for a message, shortened.
func show(v exactjson.Value) string {
	var s string
	switch v.Kind {
	case exactjson.Null:
		s = "null"
	case exactjson.False:
		s = "false"
	case exactjson.True:
		s = "true"
	case exactjson.Number:
		s = v.NumberString()
	case exactjson.String:
		s = strconv.Quote(v.Text)
	case exactjson.Object:
		s = fmt.Sprintf("an object of %d members", len(v.Members))
	case exactjson.Array:
		s = fmt.Sprintf("an array of %d elements", len(v.Items))
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
