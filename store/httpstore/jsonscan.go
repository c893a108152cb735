package httpstore

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/converge-go/converge/store"
)

// scan checks a JSON text in one pass: that it is well-formed, that no
// object has two members of the same name, and that no string holds an
// escaped lone surrogate (which encoding/json reads as U+FFFD). It
// returns nil or an error matching store.ErrInvalid that says which. It
// allocates nothing for objects of up to maxScanMembers members whose
// names have no escapes.
func scan(b []byte) error {
	var names [16][]byte
	s := scanner{b: b, names: names[:0]}
	ok := s.value()
	s.space()
	switch {
	case s.err != nil:
		return s.err
	case !ok || s.i != len(b):
		return fmt.Errorf("%w: the value is not well-formed JSON (at byte %d)", store.ErrInvalid, s.i)
	}
	return nil
}

// maxScanMembers bounds the members of an object whose names scan
// compares one with another; a larger object's are kept in a map.
const maxScanMembers = 64

type scanner struct {
	b     []byte
	i     int
	names [][]byte // member names of the objects being scanned, innermost last
	err   error    // a duplicate name or a lone surrogate, once found
}

func (s *scanner) space() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

// value scans one value; false means it stopped (not well-formed, not
// sure, or s.err).
func (s *scanner) value() bool {
	s.space()
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '{':
		return s.object()
	case '[':
		return s.array()
	case '"':
		_, ok := s.str()
		return ok
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	}
	return s.number()
}

func (s *scanner) object() bool {
	s.i++ // '{'
	mark := len(s.names)
	defer func() { s.names = s.names[:mark] }()
	var many map[string]bool // the names, once there are more than maxScanMembers
	s.space()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return true
	}
	for {
		s.space()
		name, ok := s.name()
		if !ok {
			return false
		}
		switch {
		case many != nil:
			ok = !many[string(name)]
			many[string(name)] = true
		case len(s.names)-mark < maxScanMembers:
			ok = indexOfBytes(s.names[mark:], name) < 0
			s.names = append(s.names, name)
		default:
			many = make(map[string]bool)
			for _, n := range s.names[mark:] {
				many[string(n)] = true
			}
			ok = !many[string(name)]
			many[string(name)] = true
		}
		if !ok {
			s.err = fmt.Errorf("%w: the value: member %q appears twice in an object (JSON keeps one of them)", store.ErrInvalid, name)
			return false
		}
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		if !s.value() {
			return false
		}
		if done, ok := s.next('}'); !ok || done {
			return ok
		}
	}
}

// name scans a member name and returns it unescaped.
func (s *scanner) name() ([]byte, bool) {
	raw, ok := s.str()
	if !ok || bytes.IndexByte(raw, '\\') < 0 {
		return raw, ok
	}
	var name string
	if json.Unmarshal(s.b[s.i-len(raw)-2:s.i], &name) != nil {
		return nil, false
	}
	return []byte(name), true
}

func indexOfBytes(list [][]byte, b []byte) int {
	for i, x := range list {
		if bytes.Equal(x, b) {
			return i
		}
	}
	return -1
}

func (s *scanner) array() bool {
	s.i++ // '['
	s.space()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return true
	}
	for {
		if !s.value() {
			return false
		}
		if done, ok := s.next(']'); !ok || done {
			return ok
		}
	}
}

// next reads the comma or the closing delimiter after a member or element.
func (s *scanner) next(end byte) (done, ok bool) {
	s.space()
	if s.i >= len(s.b) {
		return false, false
	}
	c := s.b[s.i]
	s.i++
	return c == end, c == end || c == ','
}

// str scans a string and returns its raw content, between the quotes.
func (s *scanner) str() ([]byte, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	s.i++
	start := s.i
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], true
		case c < 0x20:
			return nil, false
		case c == '\\':
			if !s.escape() {
				return nil, false
			}
		default:
			s.i++
		}
	}
	return nil, false
}

// escape scans one escape, refusing a lone surrogate.
func (s *scanner) escape() bool {
	if s.i+1 >= len(s.b) {
		return false
	}
	switch s.b[s.i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.i += 2
		return true
	case 'u':
	default:
		return false
	}
	r := hex4(s.b[s.i+2:])
	switch {
	case r < 0:
		return false
	case r < 0xd800 || r >= 0xe000:
		s.i += 6
		return true
	}
	if r < 0xdc00 && len(s.b) >= s.i+12 && s.b[s.i+6] == '\\' && s.b[s.i+7] == 'u' {
		if lo := hex4(s.b[s.i+8:]); lo >= 0xdc00 && lo < 0xe000 {
			s.i += 12
			return true
		}
	}
	s.err = loneSurrogate(r)
	return false
}

func (s *scanner) literal(lit string) bool {
	if !bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		return false
	}
	s.i += len(lit)
	return true
}

// number scans -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?.
func (s *scanner) number() bool {
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case !s.digits():
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if !s.digits() {
			return false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		return s.digits()
	}
	return true
}

// digits scans one or more decimal digits.
func (s *scanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

func loneSurrogate(r int) error {
	return fmt.Errorf("%w: the value holds an escaped lone surrogate (\\u%04x), which would be stored as U+FFFD", store.ErrInvalid, r)
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
