package exactjson

import "strings"

// MaxDepth bounds the nesting of arrays and objects, as encoding/json
// does.
const MaxDepth = 10000

// Kind is the kind of a JSON value.
type Kind byte

// The kinds of JSON values; the zero Kind is Null.
const (
	Null Kind = iota
	False
	True
	Number
	String
	Array
	Object
)

// Value is a JSON value as the rule reads it. Its zero value is null.
type Value struct {
	Kind Kind
	// Text is a String's text (UTF-8; an accepted lone surrogate in its
	// three-byte form, WTF-8) or a Number's canonical decimal: its sign,
	// its significant digits without leading or trailing zeros, "e" and
	// the exponent that goes with them ("12e-1" for 1.20, 0.12e1 and
	// 12E-1), so that numbers are equal exactly when their values are.
	// Zero is "0", whatever its sign.
	Text    string
	Items   []Value          // an Array's elements
	Members map[string]Value // an Object's members by name
}

// Equal reports whether v and w are the same JSON value.
func (v Value) Equal(w Value) bool {
	if v.Kind != w.Kind || v.Text != w.Text || len(v.Items) != len(w.Items) || len(v.Members) != len(w.Members) {
		return false
	}
	for i := range v.Items {
		if !v.Items[i].Equal(w.Items[i]) {
			return false
		}
	}
	for name, vm := range v.Members {
		wm, ok := w.Members[name]
		if !ok || !vm.Equal(wm) {
			return false
		}
	}
	return true
}

// NumberString writes a Number's canonical decimal for a reader: "42" for
// "42e0", else as it is ("15e-1").
func (v Value) NumberString() string { return strings.TrimSuffix(v.Text, "e0") }

// Member is a member of the top-level object of a text ParseObject read.
type Member struct {
	Name  string // its name's text
	Key   []byte // its name as written, quotes included
	Raw   []byte // its value as written
	Value Value
}

// Options choose among the rule's variants; the zero Options is the rule
// as the package doc states it.
type Options struct {
	// LoneSurrogates accepts an escaped lone surrogate, as its code unit:
	// for text kept as written rather than decoded by encoding/json.
	LoneSurrogates bool
}

// Check returns nil if data is one JSON value under the rule, else an
// *Error. It builds nothing.
func (o Options) Check(data []byte) error {
	var names [16][]byte
	p := parser{data: data, lone: o.LoneSurrogates, names: names[:0]}
	_, err := p.all()
	return err
}

// Parse returns the JSON value data holds, or an *Error if data breaks the
// rule.
func (o Options) Parse(data []byte) (Value, error) {
	p := o.parser(data, true)
	return p.all()
}

// ParseObject parses data, whose value must be an object, and returns its
// members in the order written, or an *Error.
func (o Options) ParseObject(data []byte) ([]Member, error) {
	p := o.parser(data, true)
	p.ws()
	if p.pos >= len(data) || data[p.pos] != '{' {
		return nil, p.errorf(NotObject, "the value is not a JSON object")
	}
	var members []Member
	if _, ok := p.object(&members); !ok {
		return nil, p.err
	}
	if p.ws(); p.pos != len(data) {
		return nil, p.errorf(Malformed, "data after the value")
	}
	return members, nil
}

// Check is Options{}.Check.
func Check(data []byte) error { return Options{}.Check(data) }

// Parse is Options{}.Parse.
func Parse(data []byte) (Value, error) { return Options{}.Parse(data) }
