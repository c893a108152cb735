package exactjson_test

import (
	"bytes"
	"encoding/json"
	"math/big"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/converge-go/converge/internal/exactjson"
)

// FuzzAgainstModel checks the parser against a model written from the
// package doc with encoding/json's tokens: Check, Parse and ParseObject
// accept what the model accepts, under either Options; the Value holds
// what the model reads (strings through UTF-16 code units, numbers as
// big.Rat); and two texts' Values are Equal exactly when the model's
// readings are. Its seed corpus runs as a normal test.
func FuzzAgainstModel(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"b":[1,2]}`, `{"b":[1.0,2e0],"a":10e-1}`, `{"a":1,"a":2}`, `{"a":1,"\u0061":2}`,
		`"\ud800"`, `"\ud800\udc00"`, `"𐀀"`, `"\ud800\u0041"`, `"x\udc00"`, `{"\ud800":1,"\ud801":2}`,
		`9007199254740993`, `9007199254740992`, `1e400`, `10e399`, `-0.0e5`, `0`, `1e1234567890123456789`,
		`{"a":[{"b":{"c":[null,true,false,""]}}]}`, `[1,]`, `{"a":01}`, "\"\xff\"", `"\u00e9\/\n"`, `"é/\n"`,
		`{}`, `[]`, ` null `, `{"a":1} x`, `{"a":`,
	} {
		f.Add([]byte(s), []byte(`{"b":[1,2],"a":1}`))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		for _, o := range []exactjson.Options{{}, {LoneSurrogates: true}} {
			va, ma, okA := checkAgainstModel(t, o, a)
			vb, mb, okB := checkAgainstModel(t, o, b)
			if !okA || !okB {
				continue
			}
			undecided := false
			same := modelEqual(ma, mb, &undecided)
			if !undecided && va.Equal(vb) != same {
				t.Fatalf("%+v: %q and %q: Equal %v, the model says %v", o, a, b, va.Equal(vb), same)
			}
		}
	})
}

// checkAgainstModel checks data under o against the model and returns
// its Value and the model's reading, if both accept it.
func checkAgainstModel(t *testing.T, o exactjson.Options, data []byte) (exactjson.Value, any, bool) {
	m, accept := model(data, o.LoneSurrogates)
	v, err := o.Parse(data)
	if cerr := o.Check(data); (cerr == nil) != (err == nil) {
		t.Fatalf("%+v: %q: Check says %v, Parse %v", o, data, cerr, err)
	}
	if _, oerr := o.ParseObject(data); oerr == nil && (err != nil || v.Kind != exactjson.Object) {
		t.Fatalf("%+v: %q: ParseObject accepts what Parse does not read as an object (%v)", o, data, err)
	}
	if (err == nil) != accept {
		t.Fatalf("%+v: %q: Parse says %v, the model accepts: %v", o, data, err, accept)
	}
	if accept && !modelMatches(v, m) {
		t.Fatalf("%+v: %q: Parse gives %+v, the model %v", o, data, v, m)
	}
	return v, m, accept
}

// modelHuge is a number whose exponent has more than four digits, which
// the model does not compute.
type modelHuge string

// model reads data as the package doc states the rule: nil, bool, string
// (as UTF-16 code units), *big.Rat or modelHuge, []any and
// map[string]any, or false if the rule refuses it.
func model(data []byte, lone bool) (any, bool) {
	if !utf8.Valid(data) || !json.Valid(data) { // json.Valid bounds the depth at 10000 too
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return modelValue(dec, data, lone)
}

func modelValue(dec *json.Decoder, data []byte, lone bool) (any, bool) {
	before := dec.InputOffset()
	tok, err := dec.Token()
	if err != nil {
		return nil, false
	}
	switch x := tok.(type) {
	case json.Delim:
		if x == '[' {
			items := []any{}
			for dec.More() {
				v, ok := modelValue(dec, data, lone)
				if !ok {
					return nil, false
				}
				items = append(items, v)
			}
			_, err := dec.Token()
			return items, err == nil
		}
		members := map[string]any{}
		for dec.More() {
			name, ok := modelValue(dec, data, lone)
			if !ok {
				return nil, false
			}
			if _, dup := members[name.(string)]; dup {
				return nil, false
			}
			if members[name.(string)], ok = modelValue(dec, data, lone); !ok {
				return nil, false
			}
		}
		_, err := dec.Token()
		return members, err == nil
	case string:
		raw := strings.TrimLeft(string(data[before:dec.InputOffset()]), " \t\r\n,:")
		return modelString(raw, lone)
	case json.Number:
		return modelNumber(string(x))
	}
	return tok, true // nil, bool
}

// modelString decodes a raw JSON string into its UTF-16 code units, or
// reports false if it has a lone surrogate the rule refuses.
func modelString(raw string, lone bool) (any, bool) {
	simple := map[byte]rune{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}
	var units []uint16
	for i := 1; i < len(raw)-1; {
		switch {
		case raw[i] != '\\':
			r, n := utf8.DecodeRuneInString(raw[i:])
			units = utf16.AppendRune(units, r)
			i += n
		case raw[i+1] != 'u':
			units = append(units, uint16(simple[raw[i+1]]))
			i += 2
		default:
			n, _ := new(big.Int).SetString(raw[i+2:i+6], 16)
			units = append(units, uint16(n.Uint64()))
			i += 6
		}
	}
	for i, u := range units {
		high := 0xd800 <= u && u < 0xdc00 && i+1 < len(units) && 0xdc00 <= units[i+1] && units[i+1] < 0xe000
		low := 0xdc00 <= u && u < 0xe000 && i > 0 && 0xd800 <= units[i-1] && units[i-1] < 0xdc00
		if utf16.IsSurrogate(rune(u)) && !high && !low && !lone {
			return nil, false
		}
	}
	b := make([]byte, 0, 2*len(units))
	for _, u := range units {
		b = append(b, byte(u>>8), byte(u))
	}
	return string(b), true
}

// modelNumber reads a number, refusing an exponent of more than 18 digits.
func modelNumber(s string) (any, bool) {
	_, exp, _ := strings.Cut(strings.ToLower(s), "e")
	switch digits := strings.TrimLeft(strings.TrimLeft(exp, "+-"), "0"); {
	case len(digits) > 18:
		return nil, false
	case len(digits) > 4:
		return modelHuge(s), true
	}
	r, ok := new(big.Rat).SetString(s)
	return r, ok
}

// modelEqual compares two readings; undecided is set if a modelHuge is
// met.
func modelEqual(a, b any, undecided *bool) bool {
	switch x := a.(type) {
	case modelHuge:
		*undecided = true
		return false
	case *big.Rat:
		if _, ok := b.(modelHuge); ok {
			*undecided = true
		}
		y, ok := b.(*big.Rat)
		return ok && x.Cmp(y) == 0
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		same := true
		for i := range x {
			same = modelEqual(x[i], y[i], undecided) && same
		}
		return same
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		same := true
		for name, xm := range x {
			ym, ok := y[name]
			same = ok && modelEqual(xm, ym, undecided) && same
		}
		return same
	}
	if _, ok := b.(modelHuge); ok {
		*undecided = true
	}
	return a == b
}

// modelMatches reports whether v is the model's reading m.
func modelMatches(v exactjson.Value, m any) bool {
	switch x := m.(type) {
	case nil:
		return v.Kind == exactjson.Null
	case bool:
		return v.Kind == exactjson.False && !x || v.Kind == exactjson.True && x
	case string:
		return v.Kind == exactjson.String && unitsOf(v.Text) == x
	case modelHuge:
		return v.Kind == exactjson.Number
	case *big.Rat:
		r, ok := new(big.Rat).SetString(v.Text)
		return v.Kind == exactjson.Number && ok && r.Cmp(x) == 0
	case []any:
		if v.Kind != exactjson.Array || len(v.Items) != len(x) {
			return false
		}
		for i := range x {
			if !modelMatches(v.Items[i], x[i]) {
				return false
			}
		}
		return true
	}
	obj := m.(map[string]any)
	if v.Kind != exactjson.Object || len(v.Members) != len(obj) {
		return false
	}
	for name, vm := range v.Members {
		if om, ok := obj[unitsOf(name)]; !ok || !modelMatches(vm, om) {
			return false
		}
	}
	return true
}

// unitsOf returns the UTF-16 code units of a Value's text (WTF-8: a lone
// surrogate in its three-byte form), as the model gives them.
func unitsOf(text string) string {
	var units []uint16
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		if r == utf8.RuneError && n == 1 && i+3 <= len(text) && text[i] == 0xed {
			r, n = rune(text[i]&0x0f)<<12|rune(text[i+1]&0x3f)<<6|rune(text[i+2]&0x3f), 3
		}
		units = utf16.AppendRune(units, r)
		if utf16.IsSurrogate(r) {
			units = append(units[:len(units)-1], uint16(r))
		}
		i += n
	}
	b := make([]byte, 0, 2*len(units))
	for _, u := range units {
		b = append(b, byte(u>>8), byte(u))
	}
	return string(b)
}
