package httpstore

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/converge-go/converge/internal/bearer"
)

// access says what a request may do.
type access uint8

const (
	accessNone access = iota
	accessRead
	accessWrite
)

// credentials are the handler's bearer tokens: one set of the read-write
// tokens followed by the read-only ones, so that a match at a position
// below writers may write. A token listed as both may write.
type credentials struct {
	set     *bearer.Set
	writers int
}

// newCredentials checks the tokens and returns their credentials. A token
// that could never be presented in a header (empty, white space at an end,
// a control character) is ErrInvalid, named by its kind and position,
// never by its text.
func newCredentials(rw, ro []string) (credentials, error) {
	for _, kind := range []struct {
		name   string
		tokens []string
	}{{"read-write", rw}, {"read-only", ro}} {
		if _, err := bearer.NewSet(kind.tokens); err != nil {
			return credentials{}, fmt.Errorf("%w: %s %s", ErrInvalid, kind.name, detail(err, bearer.ErrInvalid))
		}
	}
	set, err := bearer.NewSet(append(append([]string(nil), rw...), ro...))
	if err != nil {
		return credentials{}, fmt.Errorf("%w: %s", ErrInvalid, detail(err, bearer.ErrInvalid))
	}
	return credentials{set: set, writers: len(rw)}, nil
}

// authorize returns what the request's credentials allow. Without
// configured tokens everyone may write. The comparison is bearer's: in
// constant time, against every token whichever matched.
func (c credentials) authorize(r *http.Request) (access, error) {
	if c.set.Len() == 0 {
		return accessWrite, nil
	}
	i, err := c.set.Authorize(r)
	if err != nil {
		return accessNone, fmt.Errorf("%w: %s", ErrUnauthorized, detail(err, bearer.ErrUnauthorized))
	}
	if i < c.writers {
		return accessWrite, nil
	}
	return accessRead, nil
}

// detail returns what err says beyond its sentinel, so that bearer's
// reasons read as this package's errors, which name their package once.
func detail(err, sentinel error) string {
	if d, ok := strings.CutPrefix(err.Error(), sentinel.Error()+": "); ok {
		return d
	}
	return err.Error()
}
