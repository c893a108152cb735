package httpstore_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
	"github.com/stretchr/testify/require"
)

// A server in front of the handler (a manager checking tokens, a proxy)
// answers its refusals in its own words: the client still reports them as
// refusals, not as a server it cannot reach, so that callers retrying
// unavailable stores do not retry a missing token forever.
func TestRefusalsOfAServerInFrontAreUnauthorizedAndForbiddenNotUnavailable(t *testing.T) {
	for _, tc := range []struct {
		status int
		want   error
	}{
		{http.StatusUnauthorized, httpstore.ErrUnauthorized},
		{http.StatusForbidden, httpstore.ErrForbidden},
	} {
		front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "refused by the front", tc.status)
		}))
		c, err := httpstore.New[*item](front.URL)
		require.NoError(t, err)
		_, err = c.Get(t.Context(), "k")
		require.ErrorIs(t, err, tc.want)
		require.False(t, errors.Is(err, store.ErrUnavailable), "%v", err)
		_, err = c.Create(t.Context(), "k", &item{N: 1})
		require.ErrorIs(t, err, tc.want)
		c.Close()
		front.Close()
	}
}
