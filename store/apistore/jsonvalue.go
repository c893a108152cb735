package apistore

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/converge-go/converge/store"
)

// jsonValue is a JSON value as JSONKind compares it: objects by member
// name whatever the order, arrays in order, strings by their text (as
// UTF-16 code units, so that an escape and the character it stands for are
// the same text), numbers as exact decimals.
type jsonValue struct {
	kind    byte   // '{', '[', '"', '0' (a number), 't', 'f' or 'n'
	text    string // a string's code units, a number's canonical decimal
	items   []jsonValue
	members map[string]jsonValue
}

// equal reports whether a and b are the same JSON value.
func (a jsonValue) equal(b jsonValue) bool {
	if a.kind != b.kind || a.text != b.text || len(a.items) != len(b.items) || len(a.members) != len(b.members) {
		return false
	}
	for i := range a.items {
		if !a.items[i].equal(b.items[i]) {
			return false
		}
	}
	for name, av := range a.members {
		bv, ok := b.members[name]
		if !ok || !av.equal(bv) {
			return false
		}
	}
	return true
}

// member is a member of the top-level object of a JSON text.
type member struct {
	name  string // its name's code units
	key   []byte // its name as written, quotes included
	raw   []byte // its value as written
	value jsonValue
}

// maxDepth bounds the nesting of arrays and objects, as encoding/json does.
const maxDepth = 10000

// parseObject parses data, a JSON text whose value must be an object, and
// returns its members in order. Text that is not JSON, not UTF-8, nested
// deeper than maxDepth, with a member name twice in one object or a number
// whose exponent has more than 18 digits fails with store.ErrInvalid.
func parseObject(data []byte) ([]member, error) {
	p := parser{data: data}
	p.ws()
	if p.pos >= len(data) || data[p.pos] != '{' {
		return nil, p.fail("the value is not a JSON object")
	}
	var members []member
	if _, err := p.object(&members); err != nil {
		return nil, err
	}
	if p.ws(); p.pos != len(data) {
		return nil, p.fail("data after the object")
	}
	return members, nil
}

// parser reads one JSON text.
type parser struct {
	data  []byte
	pos   int
	depth int
}

func (p *parser) fail(what string) error {
	return fmt.Errorf("%w: apistore: JSON at byte %d: %s", store.ErrInvalid, p.pos, what)
}

// ws skips insignificant whitespace.
func (p *parser) ws() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value() (jsonValue, error) {
	p.ws()
	if p.pos >= len(p.data) {
		return jsonValue{}, p.fail("unexpected end")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(nil)
	case c == '[':
		return p.array()
	case c == '"':
		s, err := p.str()
		return jsonValue{kind: '"', text: s}, err
	case c == '-' || '0' <= c && c <= '9':
		return p.number()
	}
	for _, lit := range []string{"true", "false", "null"} {
		if bytes.HasPrefix(p.data[p.pos:], []byte(lit)) {
			p.pos += len(lit)
			return jsonValue{kind: lit[0]}, nil
		}
	}
	return jsonValue{}, p.fail("not a JSON value")
}

// nest enters an array or object.
func (p *parser) nest() error {
	if p.depth++; p.depth > maxDepth {
		return p.fail("nested too deep")
	}
	p.pos++
	p.ws()
	return nil
}

// object parses an object, appending its members to top if top is not nil.
func (p *parser) object(top *[]member) (jsonValue, error) {
	v := jsonValue{kind: '{', members: map[string]jsonValue{}}
	if err := p.nest(); err != nil {
		return v, err
	}
	defer func() { p.depth-- }()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return v, nil
	}
	for {
		p.ws()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return v, p.fail("want a member name")
		}
		start := p.pos
		name, err := p.str()
		if err != nil {
			return v, err
		}
		key := p.data[start:p.pos]
		if p.ws(); p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return v, p.fail("want ':'")
		}
		p.pos++
		p.ws()
		start = p.pos
		mv, err := p.value()
		if err != nil {
			return v, err
		}
		if _, dup := v.members[name]; dup {
			return v, p.fail(fmt.Sprintf("member %s twice in one object", key))
		}
		v.members[name] = mv
		if top != nil {
			*top = append(*top, member{name: name, key: key, raw: p.data[start:p.pos], value: mv})
		}
		if done, err := p.next('}'); done || err != nil {
			return v, err
		}
	}
}

// next reads the ',' or the closing byte after an element.
func (p *parser) next(closing byte) (done bool, err error) {
	p.ws()
	switch {
	case p.pos < len(p.data) && p.data[p.pos] == ',':
		p.pos++
		return false, nil
	case p.pos < len(p.data) && p.data[p.pos] == closing:
		p.pos++
		return true, nil
	}
	return false, p.fail(fmt.Sprintf("want ',' or '%c'", closing))
}

func (p *parser) array() (jsonValue, error) {
	v := jsonValue{kind: '['}
	if err := p.nest(); err != nil {
		return v, err
	}
	defer func() { p.depth-- }()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return v, nil
	}
	for {
		item, err := p.value()
		if err != nil {
			return v, err
		}
		v.items = append(v.items, item)
		if done, err := p.next(']'); done || err != nil {
			return v, err
		}
	}
}

// str parses a string and returns its text as big-endian UTF-16 code
// units: each escape stands for its unit, each character for its units.
func (p *parser) str() (string, error) {
	p.pos++ // the opening quote
	var units []uint16
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			b := make([]byte, 0, 2*len(units))
			for _, u := range units {
				b = append(b, byte(u>>8), byte(u))
			}
			return string(b), nil
		case c == '\\':
			u, err := p.escape()
			if err != nil {
				return "", err
			}
			units = append(units, u)
		case c < 0x20:
			return "", p.fail("control character in a string")
		default:
			r, size := utf8.DecodeRune(p.data[p.pos:])
			if r == utf8.RuneError && size == 1 {
				return "", p.fail("invalid UTF-8")
			}
			units = utf16.AppendRune(units, r)
			p.pos += size
		}
	}
	return "", p.fail("unterminated string")
}

// escapes are the code units of JSON's one-character escapes.
var escapes = map[byte]uint16{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// escape parses the escape at p.pos and returns the code unit it stands
// for.
func (p *parser) escape() (uint16, error) {
	if p.pos+1 >= len(p.data) {
		return 0, p.fail("unterminated escape")
	}
	c := p.data[p.pos+1]
	p.pos += 2
	if u, ok := escapes[c]; ok {
		return u, nil
	}
	if c != 'u' || p.pos+4 > len(p.data) {
		return 0, p.fail("invalid escape")
	}
	u, err := strconv.ParseUint(string(p.data[p.pos:p.pos+4]), 16, 16)
	if err != nil {
		return 0, p.fail("invalid \\u escape")
	}
	p.pos += 4
	return uint16(u), nil
}

// number parses a number and returns it as a canonical decimal: its sign,
// its significant digits without leading or trailing zeros, and the
// exponent that goes with them ("12e-1" for 1.20, 0.12e1 and 12E-1), so
// that numbers are equal exactly when their values are. Zero is "0",
// whatever its sign.
func (p *parser) number() (jsonValue, error) {
	neg := p.data[p.pos] == '-'
	if neg {
		p.pos++
	}
	intPart := p.digits()
	switch {
	case intPart == "":
		return jsonValue{}, p.fail("malformed number")
	case len(intPart) > 1 && intPart[0] == '0':
		return jsonValue{}, p.fail("number with a leading zero")
	}
	var frac, exp string
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		p.pos++
		if frac = p.digits(); frac == "" {
			return jsonValue{}, p.fail("malformed fraction")
		}
	}
	expNeg := false
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			expNeg = p.data[p.pos] == '-'
			p.pos++
		}
		if exp = p.digits(); exp == "" {
			return jsonValue{}, p.fail("malformed exponent")
		}
	}
	return p.canonical(neg, intPart+frac, len(frac), exp, expNeg)
}

// canonical returns the number of sign neg, digits and exponent
// exp (its digits) - fracLen.
func (p *parser) canonical(neg bool, digits string, fracLen int, exp string, expNeg bool) (jsonValue, error) {
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return jsonValue{kind: '0', text: "0"}, nil
	}
	trimmed := strings.TrimRight(digits, "0")
	exp = strings.TrimLeft(exp, "0")
	if len(exp) > 18 {
		return jsonValue{}, p.fail("exponent of more than 18 digits")
	}
	e, _ := strconv.ParseInt("0"+exp, 10, 64)
	if expNeg {
		e = -e
	}
	e += int64(len(digits)-len(trimmed)) - int64(fracLen)
	sign := ""
	if neg {
		sign = "-"
	}
	return jsonValue{kind: '0', text: sign + trimmed + "e" + strconv.FormatInt(e, 10)}, nil
}

// digits reads a run of decimal digits.
func (p *parser) digits() string {
	start := p.pos
	for p.pos < len(p.data) && '0' <= p.data[p.pos] && p.data[p.pos] <= '9' {
		p.pos++
	}
	return string(p.data[start:p.pos])
}
