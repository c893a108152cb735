package httpstore_test

import (
	"bytes"
	"encoding/json"
	"io"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// FuzzHandlerRawBody writes arbitrary request bodies through the handler,
// for a map[string]any and a struct value type, over a memory store and a
// store of JSON bytes, and reads them back through a Client: a body is
// either refused with code "invalid" (store.ErrInvalid on a client) and
// nothing is written, or accepted, and then what Get returns encodes as
// the same JSON value as the body, by refSameJSON. Its seed corpus runs as
// a normal test.
func FuzzHandlerRawBody(f *testing.F) {
	for _, s := range []string{
		`{"n":9007199254740993}`, `{"name":"\ud800"}`, `{"a":1,"a":2}`,
		`{"n":9007199254740992}`, `{"n":1e308}`, `{"n":1e309}`, `{"n":1e-400}`, `{"n":123456789012345678901234567890}`,
		`{"ratio":1.0e2}`, `{"ratio":-0.0}`, `{"ratio":5e-324}`, `{"ratio":0.30000000000000004}`,
		`{"meta":{"x":{"a":1,"a":1}}}`, `{"meta":{"l":[{"b":[1,{"c":2,"c":3}]}]}}`,
		`{"name":"a","nmae":"b"}`, `{"NAME":"a"}`, `{"name":"a","Name":"b"}`, `{"inner":{"a":1,"c":0}}`,
		`{"name":"\ud83d\ude00\\ud800\u00e9"}`, `{"\ud800":""}`, `{"\u0061":1,"a":2}`, `{"tags":["a",null]}`, `{"count":0,"tags":[],"x":{}}`,
		`{}`, `[]`, `null`, `"s"`, `{"name":"a"} x`, `{"name":`,
	} {
		f.Add([]byte(s))
	}
	targets := exactTargets(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, tg := range targets {
			before := tg.revision(t)
			key, status, code := tg.create(t, body)
			if want, err := tg.model(body); status >= 300 && err == nil && utf8.Valid(body) && refSameJSON(body, want) {
				t.Fatalf("%s: %q refused (%d %s), though it would be stored as %s, the same JSON value", tg.name, body, status, code, want)
			}
			if status >= 300 {
				if code != "invalid" || status >= 500 {
					t.Fatalf("%s: %q refused with %d %s, want a 4xx with code invalid", tg.name, body, status, code)
				}
				if after := tg.revision(t); after != before {
					t.Fatalf("%s: %q was refused and wrote (revision %d -> %d)", tg.name, body, before, after)
				}
				continue
			}
			got, err := tg.get(key)
			if err != nil {
				t.Fatalf("%s: %q accepted, then Get: %v", tg.name, body, err)
			}
			if !refSameJSON(body, got) {
				t.Fatalf("%s: %q accepted and read back as %s, another JSON value", tg.name, body, got)
			}
		}
	})
}

// refSameJSON is the fuzz test's reference: whether got (the JSON of what
// a reader gets) is the same JSON value as body (what a writer sent), in
// the sense the handler documents, decided without the handler's code: by
// a plain walk of encoding/json's tokens, strings decoded from their raw
// text through UTF-16, numbers compared as big.Rat. A body with a
// duplicate member name or an escaped lone surrogate is never the same.
func refSameJSON(body, got []byte) bool {
	b, ok := refParse(body)
	if !ok {
		return false
	}
	a, ok := refParse(got)
	return ok && refEqual(b, a, false)
}

// refParse decodes data into nil, bool, string, *big.Rat, []any and
// map[string]any, or reports false for what refSameJSON refuses.
func refParse(data []byte) (any, bool) {
	if !json.Valid(data) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, ok := refNext(dec, data)
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return v, ok
}

func refNext(dec *json.Decoder, data []byte) (any, bool) {
	start := dec.InputOffset()
	tok, err := dec.Token()
	if err != nil {
		return nil, false
	}
	switch tok := tok.(type) {
	case json.Delim:
		if tok == '[' {
			var arr []any
			for dec.More() {
				v, ok := refNext(dec, data)
				if !ok {
					return nil, false
				}
				arr = append(arr, v)
			}
			_, err := dec.Token()
			return arr, err == nil
		}
		obj := map[string]any{}
		for dec.More() {
			name, ok := refNext(dec, data)
			if !ok {
				return nil, false
			}
			if _, dup := obj[name.(string)]; dup {
				return nil, false
			}
			if obj[name.(string)], ok = refNext(dec, data); !ok {
				return nil, false
			}
		}
		_, err := dec.Token()
		return obj, err == nil
	case json.Number:
		return refRat(string(tok))
	case string:
		raw := string(data[start:dec.InputOffset()])
		return refString(raw[strings.IndexByte(raw, '"'):])
	default:
		return tok, true
	}
}

// refHuge is a number out of every float64's range, by its text.
type refHuge string

// refRat reads a number; one with an exponent of more than four digits is
// a refHuge (or zero, if its digits are all zeros).
func refRat(s string) (any, bool) {
	mant, exp, _ := strings.Cut(strings.ToLower(s), "e")
	if len(strings.TrimLeft(strings.TrimLeft(exp, "+-"), "0")) > 4 {
		if strings.Trim(mant, "-0.") == "" {
			return new(big.Rat), true
		}
		return refHuge(s), true
	}
	r, ok := new(big.Rat).SetString(s)
	return r, ok
}

// refString decodes a raw JSON string token, or reports false if it holds
// an escaped lone surrogate.
func refString(raw string) (any, bool) {
	var units []uint16
	simple := map[byte]rune{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}
	for i := 1; i < len(raw)-1; {
		if raw[i] != '\\' {
			r, n := utf8.DecodeRuneInString(raw[i:])
			units = utf16.AppendRune(units, r)
			i += n
			continue
		}
		if raw[i+1] != 'u' {
			units = utf16.AppendRune(units, simple[raw[i+1]])
			i += 2
			continue
		}
		u, err := strconv.ParseUint(raw[i+2:i+6], 16, 16)
		if err != nil {
			return nil, false
		}
		units = append(units, uint16(u))
		i += 6
	}
	for i := 0; i < len(units); i++ {
		if !utf16.IsSurrogate(rune(units[i])) {
			continue
		}
		if i+1 == len(units) || utf16.DecodeRune(rune(units[i]), rune(units[i+1])) == utf8.RuneError {
			return nil, false
		}
		i++
	}
	return string(utf16.Decode(units)), true
}

// refEqual compares parsed values; member says whether b is an object's
// member, where null stands for a zero.
func refEqual(b, a any, member bool) bool {
	switch bv := b.(type) {
	case nil:
		return a == nil || member && refZero(a, true)
	case *big.Rat:
		av, ok := a.(*big.Rat)
		return ok && bv.Cmp(av) == 0
	case []any:
		av, ok := a.([]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for i := range bv {
			if !refEqual(bv[i], av[i], false) {
				return false
			}
		}
		return true
	case map[string]any:
		av, ok := a.(map[string]any)
		if !ok {
			return false
		}
		for name, x := range bv {
			y, in := av[name]
			if in && !refEqual(x, y, true) || !in && !refZero(x, false) {
				return false
			}
		}
		for name, y := range av {
			if _, in := bv[name]; !in && !refZero(y, true) {
				return false
			}
		}
		return true
	}
	return b == a
}

// refZero reports whether v is JSON's zero (null, false, 0, "", [], {})
// or, if deep, an object of deep zeros.
func refZero(v any, deep bool) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case string:
		return x == ""
	case *big.Rat:
		return x.Sign() == 0
	case []any:
		return len(x) == 0
	case map[string]any:
		for _, m := range x {
			if !deep || !refZero(m, true) {
				return false
			}
		}
		return true
	}
	return false
}
