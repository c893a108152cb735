package bearer_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/internal/bearer"
	"github.com/converge-go/converge/store"
)

func request(authorization ...string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	for _, a := range authorization {
		r.Header.Add("Authorization", a)
	}
	return r
}

// TestAuthorizeNamesTheFirstConfiguredTokenPresented: a request carrying a
// token of the set is authorized with that token's position, the first
// one when the token is listed twice; the scheme's case does not matter.
func TestAuthorizeNamesTheFirstConfiguredTokenPresented(t *testing.T) {
	s, err := bearer.NewSet([]string{"rw-secret", "ro-secret", "rw-secret", "with inner space"})
	require.NoError(t, err)
	require.Equal(t, 4, s.Len())
	for header, want := range map[string]int{
		"Bearer rw-secret":        0,
		"Bearer ro-secret":        1,
		"bearer ro-secret":        1,
		"BEARER rw-secret":        0,
		"Bearer with inner space": 3,
	} {
		got, err := s.Authorize(request(header))
		require.NoError(t, err, header)
		require.Equal(t, want, got, header)
	}
}

// TestAuthorizeRefusesEveryRequestWithoutExactlyOneKnownToken: no header,
// two headers, another scheme, a prefix or extension of a token, and an
// unknown token are all ErrUnauthorized, and no error shows what was
// presented or configured.
func TestAuthorizeRefusesEveryRequestWithoutExactlyOneKnownToken(t *testing.T) {
	s, err := bearer.NewSet([]string{"the-secret"})
	require.NoError(t, err)
	for name, r := range map[string]*http.Request{
		"no header":        request(),
		"two headers":      request("Bearer the-secret", "Bearer the-secret"),
		"basic scheme":     request("Basic the-secret"),
		"no scheme":        request("the-secret"),
		"empty token":      request("Bearer "),
		"prefix of token":  request("Bearer the-secre"),
		"token extended":   request("Bearer the-secret-and-more"),
		"unknown token":    request("Bearer guessed"),
		"scheme only":      request("Bearer"),
		"token in a query": httptest.NewRequest(http.MethodGet, "/?access_token=the-secret", nil),
	} {
		_, err := s.Authorize(r)
		require.ErrorIs(t, err, bearer.ErrUnauthorized, name)
		for _, secret := range []string{"the-secret", "the-secre", "guessed"} {
			require.NotContains(t, err.Error(), secret, name)
		}
	}
}

// TestTheZeroSetMatchesNoToken: a Set without tokens authorizes nothing;
// serving everyone without tokens is the caller's decision.
func TestTheZeroSetMatchesNoToken(t *testing.T) {
	var s bearer.Set
	require.Zero(t, s.Len())
	_, ok := s.Match("")
	require.False(t, ok)
	_, err := s.Authorize(request("Bearer x"))
	require.ErrorIs(t, err, bearer.ErrUnauthorized)
}

// TestTokensThatCouldNeverBePresentedAreInvalid: an empty token, one with
// white space at an end (which HTTP drops from a header) or with a control
// character is refused with ErrInvalid, matching every converge package's,
// and the error names its position, not its text.
func TestTokensThatCouldNeverBePresentedAreInvalid(t *testing.T) {
	for _, tok := range []string{"", " lead-secret", "trail-secret ", "tab-secret\t", "line\nsecret", "nul\x00secret", "del\x7fsecret"} {
		_, err := bearer.NewSet([]string{"good-one", tok})
		require.ErrorIs(t, err, bearer.ErrInvalid, "%q", tok)
		require.ErrorIs(t, err, store.ErrInvalid, "%q", tok)
		require.Contains(t, err.Error(), "token 2 of 2")
		if tok != "" {
			require.False(t, strings.Contains(err.Error(), strings.TrimSpace(tok)), "%q shown in %q", tok, err)
		}
	}
}
