package exactjson

import (
	"bytes"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// parser reads one JSON text, checking the rule as it goes and, if build,
// building the Values. Its reading functions return false once p.err is
// set.
type parser struct {
	data  []byte
	pos   int
	depth int
	lone  bool     // accept escaped lone surrogates
	build bool     // build Values
	names [][]byte // check mode: member names of the objects being read, innermost last
	buf   []byte   // the text of the last string with an escape
	err   *Error
}

// maxNames bounds the members of an object whose names check mode
// compares one with another; a larger object's go in a map.
const maxNames = 64

func (o Options) parser(data []byte, build bool) *parser {
	return &parser{data: data, lone: o.LoneSurrogates, build: build}
}

// errorf sets p.err, if not set yet, to a problem at p.pos, and returns it.
func (p *parser) errorf(problem Problem, format string, args ...any) *Error {
	if p.err == nil {
		p.err = &Error{Offset: p.pos, Problem: problem, what: fmt.Sprintf(format, args...)}
	}
	return p.err
}

// fail is errorf for the reading functions.
func (p *parser) fail(problem Problem, format string, args ...any) bool {
	p.errorf(problem, format, args...)
	return false
}

// all reads the whole text as one value.
func (p *parser) all() (Value, error) {
	v, ok := p.value()
	if !ok {
		return Value{}, p.err
	}
	if p.ws(); p.pos != len(p.data) {
		return Value{}, p.errorf(Malformed, "data after the value")
	}
	return v, nil
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

func (p *parser) value() (Value, bool) {
	p.ws()
	if p.pos >= len(p.data) {
		return Value{}, p.fail(Malformed, "unexpected end")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(nil)
	case c == '[':
		return p.array()
	case c == '"':
		s, ok := p.str()
		if !ok || !p.build {
			return Value{}, ok
		}
		return Value{Kind: String, Text: string(s)}, true
	case c == '-' || '0' <= c && c <= '9':
		return p.number()
	}
	for _, lit := range [...]struct {
		text string
		kind Kind
	}{{"true", True}, {"false", False}, {"null", Null}} {
		if bytes.HasPrefix(p.data[p.pos:], []byte(lit.text)) {
			p.pos += len(lit.text)
			return Value{Kind: lit.kind}, true
		}
	}
	return Value{}, p.fail(Malformed, "not a JSON value")
}

// open enters an array or object, reporting whether closing ends it at
// once (then it has left it too); else leave leaves it.
func (p *parser) open(closing byte) (empty, ok bool) {
	if p.depth++; p.depth > MaxDepth {
		return false, p.fail(TooDeep, "nested too deep")
	}
	p.pos++
	p.ws()
	if p.pos < len(p.data) && p.data[p.pos] == closing {
		p.pos++
		p.leave()
		return true, true
	}
	return false, true
}

func (p *parser) leave() { p.depth-- }

// object reads an object, appending its members to top if top is not nil.
func (p *parser) object(top *[]Member) (Value, bool) {
	var v Value
	if p.build {
		v = Value{Kind: Object, Members: map[string]Value{}}
	}
	if empty, ok := p.open('}'); empty || !ok {
		return v, ok
	}
	defer p.leave()
	names := nameSet{mark: len(p.names)}
	defer func() { p.names = p.names[:names.mark] }()
	for {
		if p.ws(); p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return v, p.fail(Malformed, "want a member name")
		}
		start := p.pos
		name, ok := p.str()
		if !ok {
			return v, false
		}
		if !p.newName(&names, &v, name, start) {
			return v, false
		}
		key := p.data[start:p.pos]
		if p.ws(); p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return v, p.fail(Malformed, "want ':'")
		}
		p.pos++
		p.ws()
		start = p.pos
		mv, ok := p.value()
		if !ok {
			return v, false
		}
		if p.build {
			v.Members[string(name)] = mv
		}
		if top != nil {
			*top = append(*top, Member{Name: string(name), Key: key, Raw: p.data[start:p.pos], Value: mv})
		}
		if done, ok := p.next('}'); done || !ok {
			return v, ok
		}
	}
}

// nameSet is the names of one object in check mode: in p.names from mark
// on, or in many once there are more than maxNames.
type nameSet struct {
	mark int
	many map[string]bool
}

// newName records name, read from start, as a member of the object v (in
// build mode) or of names, failing if the object has it already.
func (p *parser) newName(names *nameSet, v *Value, name []byte, start int) bool {
	var dup bool
	switch {
	case p.build:
		_, dup = v.Members[string(name)]
	case names.many != nil:
		dup = names.many[string(name)]
		names.many[string(name)] = true
	case len(p.names)-names.mark < maxNames:
		for _, n := range p.names[names.mark:] {
			dup = dup || bytes.Equal(n, name)
		}
		if bytes.IndexByte(p.data[start:p.pos], '\\') >= 0 {
			name = bytes.Clone(name) // p.buf, reused by the next string
		}
		p.names = append(p.names, name)
	default:
		names.many = make(map[string]bool, 2*maxNames)
		for _, n := range p.names[names.mark:] {
			names.many[string(n)] = true
		}
		dup = names.many[string(name)]
		names.many[string(name)] = true
	}
	if dup {
		p.pos = start
		p.errorf(Duplicate, "member %s twice in one object", p.data[start:p.endOfString(start)]).Name = string(name)
		return false
	}
	return true
}

// endOfString returns the end of the well-formed string at start.
func (p *parser) endOfString(start int) int {
	q := parser{data: p.data, pos: start, lone: true}
	q.str()
	return q.pos
}

// next reads the ',' or the closing byte after an element.
func (p *parser) next(closing byte) (done, ok bool) {
	p.ws()
	switch {
	case p.pos < len(p.data) && p.data[p.pos] == ',':
		p.pos++
		return false, true
	case p.pos < len(p.data) && p.data[p.pos] == closing:
		p.pos++
		return true, true
	}
	return false, p.fail(Malformed, "want ',' or '%c'", closing)
}

func (p *parser) array() (Value, bool) {
	v := Value{Kind: Array}
	if empty, ok := p.open(']'); empty || !ok {
		return v, ok
	}
	defer p.leave()
	for {
		item, ok := p.value()
		if !ok {
			return v, false
		}
		if p.build {
			v.Items = append(v.Items, item)
		}
		if done, ok := p.next(']'); done || !ok {
			return v, ok
		}
	}
}

// str reads the string at p.pos and returns its text: borrowed from data
// if it has no escape, else p.buf, valid until the next string.
func (p *parser) str() ([]byte, bool) {
	p.pos++ // the opening quote
	start, escaped := p.pos, false
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			if escaped {
				return p.buf, true
			}
			return p.data[start : p.pos-1], true
		case c == '\\':
			if !escaped {
				p.buf, escaped = append(p.buf[:0], p.data[start:p.pos]...), true
			}
			if !p.escape() {
				return nil, false
			}
			continue
		case c < 0x20:
			return nil, p.fail(Malformed, "control character in a string")
		}
		size := 1
		if c >= utf8.RuneSelf {
			if r, n := utf8.DecodeRune(p.data[p.pos:]); r == utf8.RuneError && n == 1 {
				return nil, p.fail(Malformed, "invalid UTF-8")
			} else {
				size = n
			}
		}
		if escaped {
			p.buf = append(p.buf, p.data[p.pos:p.pos+size]...)
		}
		p.pos += size
	}
	return nil, p.fail(Malformed, "unterminated string")
}

// escape reads the escape at p.pos and appends what it stands for to
// p.buf: a surrogate pair's character, or an accepted lone surrogate's
// three bytes.
func (p *parser) escape() bool {
	if p.pos+1 >= len(p.data) {
		return p.fail(Malformed, "unterminated escape")
	}
	c := p.data[p.pos+1]
	if i := bytes.IndexByte([]byte(`"\/bfnrt`), c); i >= 0 {
		p.buf = append(p.buf, "\"\\/\b\f\n\r\t"[i])
		p.pos += 2
		return true
	}
	r := rune(hex4(p.data[p.pos+2:]))
	switch {
	case c != 'u':
		return p.fail(Malformed, "invalid escape")
	case r < 0:
		return p.fail(Malformed, "invalid \\u escape")
	case !utf16.IsSurrogate(r):
		p.buf = utf8.AppendRune(p.buf, r)
		p.pos += 6
		return true
	}
	if r < 0xdc00 && bytes.HasPrefix(p.data[p.pos+6:], []byte(`\u`)) {
		if lo := rune(hex4(p.data[p.pos+8:])); 0xdc00 <= lo && lo < 0xe000 {
			p.buf = utf8.AppendRune(p.buf, utf16.DecodeRune(r, lo))
			p.pos += 12
			return true
		}
	}
	if !p.lone {
		p.errorf(LoneSurrogate, "an escaped lone surrogate (\\u%04x)", r).Unit = r
		return false
	}
	p.buf = append(p.buf, 0xe0|byte(r>>12), 0x80|byte(r>>6)&0x3f, 0x80|byte(r)&0x3f)
	p.pos += 6
	return true
}

// hex4 returns the value of the four hex digits b starts with, or -1.
func hex4(b []byte) int {
	if len(b) < 4 {
		return -1
	}
	n := 0
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			n = n<<4 | int(c-'0')
		case c >= 'a' && c <= 'f':
			n = n<<4 | int(c-'a'+10)
		case c >= 'A' && c <= 'F':
			n = n<<4 | int(c-'A'+10)
		default:
			return -1
		}
	}
	return n
}
