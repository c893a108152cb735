package httpstore

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"
)

// token is a configured bearer token, kept as its SHA-256 so that every
// comparison has the same length and takes the same time.
type token struct {
	sum   [sha256.Size]byte
	write bool
}

func newToken(tok string, write bool) token {
	return token{sum: sha256.Sum256([]byte(tok)), write: write}
}

// access says what a request may do.
type access uint8

const (
	accessNone access = iota
	accessRead
	accessWrite
)

// authorize returns what the request's credentials allow. Without
// configured tokens everyone may write. The presented token is compared
// with every configured one in constant time, whether or not an earlier one
// matched, so the timing tells nothing about which token or how much of it
// matched.
func authorize(tokens []token, r *http.Request) (access, error) {
	if len(tokens) == 0 {
		return accessWrite, nil
	}
	h := r.Header.Values("Authorization")
	if len(h) != 1 {
		return accessNone, fmt.Errorf("%w: want exactly one Authorization header, got %d", ErrUnauthorized, len(h))
	}
	scheme, presented, ok := strings.Cut(h[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return accessNone, fmt.Errorf("%w: want Authorization: Bearer TOKEN", ErrUnauthorized)
	}
	sum := sha256.Sum256([]byte(presented))
	got := accessNone
	for _, t := range tokens {
		if subtle.ConstantTimeCompare(sum[:], t.sum[:]) == 1 {
			a := accessRead
			if t.write {
				a = accessWrite
			}
			got = max(got, a)
		}
	}
	if got == accessNone {
		return accessNone, fmt.Errorf("%w: unknown token", ErrUnauthorized)
	}
	return got, nil
}
