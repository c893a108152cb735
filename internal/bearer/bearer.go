// Package bearer checks bearer tokens (RFC 6750, "Authorization: Bearer
// TOKEN") against a configured set, the one comparison behind every
// converge server that takes tokens.
//
// A Set keeps only the SHA-256 of each token, so that every comparison has
// the same length and takes the same time, and compares a presented token
// with every configured one, whichever matched, with crypto/subtle: the
// time an answer takes tells nothing about which token matched or how much
// of one. No error, log or String of this package holds a token.
package bearer

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/converge-go/converge/internal/invalid"
)

// Errors of the package. Test for them with errors.Is.
var (
	// ErrUnauthorized: a request carries no token of the set (none, more
	// than one Authorization header, another scheme, or an unknown token).
	// Servers answer it with 401 and the Challenge header.
	ErrUnauthorized = errors.New("bearer: unauthorized")
	// ErrInvalid: a token that could never be presented (empty, with
	// leading or trailing white space, or with a control character). It
	// matches the ErrInvalid of every converge package.
	ErrInvalid error = invalid.New("bearer")
)

// Challenge is the value of the WWW-Authenticate header that goes with a
// 401 answer to a request refused with ErrUnauthorized.
const Challenge = "Bearer"

// Set is a set of bearer tokens. The zero Set holds none and matches no
// token; whether a server without tokens serves everyone is its own
// decision (Len tells). A Set is safe for concurrent use.
type Set struct {
	sums [][sha256.Size]byte
}

// NewSet returns the set of tokens, in the order given (duplicates
// allowed: Match reports the first). A token that could never be presented
// in a header returns an error matching ErrInvalid that names its position,
// never its text.
func NewSet(tokens []string) (*Set, error) {
	s := &Set{sums: make([][sha256.Size]byte, 0, len(tokens))}
	for i, tok := range tokens {
		if err := presentable(tok); err != nil {
			return nil, fmt.Errorf("%w: token %d of %d: %v", ErrInvalid, i+1, len(tokens), err)
		}
		s.sums = append(s.sums, sha256.Sum256([]byte(tok)))
	}
	return s, nil
}

// presentable says why tok cannot travel in an Authorization header, or
// returns nil.
func presentable(tok string) error {
	switch {
	case tok == "":
		return errors.New("empty")
	case strings.TrimSpace(tok) != tok:
		return errors.New("leading or trailing white space, which HTTP drops")
	case strings.ContainsFunc(tok, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return errors.New("a control character")
	}
	return nil
}

// Len returns the number of tokens in the set.
func (s *Set) Len() int { return len(s.sums) }

// Match reports whether presented is a token of the set and, if so, the
// position in NewSet's list of the first token it equals (0 otherwise).
// It compares presented with every token of the set, in time that depends
// only on the set's size.
func (s *Set) Match(presented string) (index int, ok bool) {
	sum := sha256.Sum256([]byte(presented))
	found := -1
	for i := range s.sums {
		eq := subtle.ConstantTimeCompare(sum[:], s.sums[i][:])
		first := subtle.ConstantTimeEq(int32(found), -1)
		found = subtle.ConstantTimeSelect(eq&first, i, found)
	}
	if found < 0 {
		return 0, false
	}
	return found, true
}

// Authorize returns the position of the token r carries (see Match), or an
// error matching ErrUnauthorized when r has not exactly one Authorization
// header, its scheme is not Bearer (in any case), or its token is not in
// the set. The error says which, never what was presented.
func (s *Set) Authorize(r *http.Request) (index int, err error) {
	h := r.Header.Values("Authorization")
	switch len(h) {
	case 0:
		return 0, fmt.Errorf("%w: no Authorization header; want Authorization: Bearer TOKEN", ErrUnauthorized)
	case 1:
	default:
		return 0, fmt.Errorf("%w: want exactly one Authorization header, got %d", ErrUnauthorized, len(h))
	}
	scheme, presented, ok := strings.Cut(h[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return 0, fmt.Errorf("%w: want Authorization: Bearer TOKEN", ErrUnauthorized)
	}
	index, ok = s.Match(presented)
	if !ok {
		return 0, fmt.Errorf("%w: unknown token", ErrUnauthorized)
	}
	return index, nil
}
