package httpstore_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
	"github.com/stretchr/testify/require"
)

type item struct {
	N int    `json:"n"`
	S string `json:"s"`
}

const (
	rwToken = "read-write-token-0123456789"
	roToken = "read-only-token-01234567890"
)

// guarded serves a memory store holding one key, "seed", with a read-write
// and a read-only token.
func guarded(t *testing.T, opts ...httpstore.HandlerOption) (*store.Memory[*item], string) {
	t.Helper()
	m := store.NewMemory[*item]()
	t.Cleanup(func() { _ = m.Close() })
	_, err := m.Create(t.Context(), "seed", &item{N: 1})
	require.NoError(t, err)
	opts = append([]httpstore.HandlerOption{httpstore.WithReadWriteToken(rwToken), httpstore.WithReadOnlyToken(roToken)}, opts...)
	return m, serve[*item](t, m, opts...).URL
}

// unchanged checks that m still holds only "seed", at revision 1.
func unchanged(t *testing.T, m *store.Memory[*item]) {
	t.Helper()
	objs, rev, err := m.List(context.Background(), "")
	require.NoError(t, err)
	require.Equal(t, int64(1), rev, "the store's revision: something was written")
	require.Len(t, objs, 1)
	require.Equal(t, "seed", objs[0].Key)
}

// tryAll makes every kind of call and returns their errors by name.
func tryAll(t *testing.T, c *httpstore.Client[*item]) map[string]error {
	ctx := t.Context()
	errs := map[string]error{}
	_, errs["Create"] = c.Create(ctx, "new", &item{N: 2})
	_, errs["Update"] = c.Update(ctx, "seed", &item{N: 2}, 1)
	_, errs["Delete"] = c.Delete(ctx, "new", 2)
	res, err := c.WriteBatch(ctx, []store.Write[*item]{{Key: "batched", Value: &item{N: 3}}})
	if err == nil && len(res) == 1 {
		err = res[0].Err // a request that got no answer fails its writes
	}
	errs["WriteBatch"] = err
	_, errs["Get"] = c.Get(ctx, "seed")
	_, _, errs["List"] = c.List(ctx, "")
	_, errs["Revision"] = c.Revision(ctx)
	w, err := c.Watch(ctx, "", 0)
	if w != nil {
		w.Stop()
	}
	errs["Watch"] = err
	return errs
}

func TestRequestWithoutCredentialsIsRefusedAndWritesNothing(t *testing.T) {
	m, url := guarded(t)
	for name, err := range tryAll(t, client[*item](t, url)) {
		require.ErrorIs(t, err, httpstore.ErrUnauthorized, name)
	}
	unchanged(t, m)
}

func TestWrongTokenIsRefusedAndWritesNothing(t *testing.T) {
	m, url := guarded(t)
	// Same length as the real ones, one character off, and a prefix.
	for _, tok := range []string{"read-write-token-0123456788", "read-write-token", rwToken + "x"} {
		for name, err := range tryAll(t, client[*item](t, url, httpstore.WithToken(tok))) {
			require.ErrorIs(t, err, httpstore.ErrUnauthorized, "%s with token %q", name, tok)
		}
	}
	// Another scheme, or two headers, are refused too.
	for _, hdr := range [][]string{{"Basic " + rwToken}, {"Bearer " + rwToken, "Bearer " + rwToken}, {rwToken}} {
		req, err := http.NewRequest(http.MethodPost, url+"/v1/create?key=new", jsonBody(`{"n":2}`))
		require.NoError(t, err)
		req.Header["Authorization"] = hdr
		req.Header.Set("Content-Type", "application/json")
		status, code := do(t, req)
		require.Equal(t, http.StatusUnauthorized, status, "Authorization %q", hdr)
		require.Equal(t, "unauthorized", code)
	}
	unchanged(t, m)
}

func TestReadOnlyTokenReadsButItsWritesAreForbiddenAndWriteNothing(t *testing.T) {
	m, url := guarded(t)
	errs := tryAll(t, client[*item](t, url, httpstore.WithToken(roToken)))
	for _, name := range []string{"Create", "Update", "Delete", "WriteBatch"} {
		require.ErrorIs(t, errs[name], httpstore.ErrForbidden, name)
		require.False(t, errors.Is(errs[name], store.ErrUnavailable), "%s: a refusal is not an unknown outcome", name)
	}
	for _, name := range []string{"Get", "List", "Revision", "Watch"} {
		require.NoError(t, errs[name], name)
	}
	unchanged(t, m)
}

func TestReadWriteTokenWrites(t *testing.T) {
	m, url := guarded(t)
	errs := tryAll(t, client[*item](t, url, httpstore.WithToken(rwToken)))
	for name, err := range errs {
		require.NoError(t, err, name)
	}
	got, err := m.Get(t.Context(), "seed")
	require.NoError(t, err)
	require.Equal(t, &item{N: 2}, got.Value)
}

// TestEveryTokenMayDoWhatItsKindAllowsAndATokenOfBothKindsMayWrite: with
// several tokens of each kind, each read-write token writes, each
// read-only one reads and is forbidden to write, and a token given as
// both may write.
func TestEveryTokenMayDoWhatItsKindAllowsAndATokenOfBothKindsMayWrite(t *testing.T) {
	const both = "given-as-both-kinds-0123456"
	m, url := guarded(t,
		httpstore.WithReadOnlyToken(both), httpstore.WithReadWriteToken("second-read-write-token-01"),
		httpstore.WithReadOnlyToken("second-read-only-token-0123"), httpstore.WithReadWriteToken(both))
	for i, tok := range []string{rwToken, "second-read-write-token-01", both} {
		c := client[*item](t, url, httpstore.WithToken(tok))
		_, err := c.Create(t.Context(), "new"+strconv.Itoa(i), &item{N: i})
		require.NoError(t, err, "token %d", i)
	}
	for _, tok := range []string{roToken, "second-read-only-token-0123"} {
		c := client[*item](t, url, httpstore.WithToken(tok))
		_, err := c.Get(t.Context(), "seed")
		require.NoError(t, err)
		_, err = c.Update(t.Context(), "seed", &item{N: 9}, 1)
		require.ErrorIs(t, err, httpstore.ErrForbidden)
	}
	got, err := m.Get(t.Context(), "seed")
	require.NoError(t, err)
	require.Equal(t, int64(1), got.Revision, "no read-only token wrote")
}

// TestTokensHTTPCannotCarryExactlyAreInvalidAndNeverShown: a handler token
// or a client token that is empty, has white space at an end (which HTTP
// drops) or holds a control character makes NewHandler or New fail with
// ErrInvalid (store.ErrInvalid too), naming the token's kind and position
// but never its text.
func TestTokensHTTPCannotCarryExactlyAreInvalidAndNeverShown(t *testing.T) {
	m := store.NewMemory[*item]()
	t.Cleanup(func() { _ = m.Close() })
	for _, tok := range []string{"", " lead-secret", "trail-secret ", "tab-secret\t", "line\nsecret", "nul\x00secret", "del\x7fsecret"} {
		for kind, opt := range map[string]httpstore.HandlerOption{
			"read-write token 2 of 2": httpstore.WithReadWriteToken(tok),
			"read-only token 2 of 2":  httpstore.WithReadOnlyToken(tok),
		} {
			_, err := httpstore.NewHandler[*item](m,
				httpstore.WithReadWriteToken(rwToken), httpstore.WithReadOnlyToken(roToken), opt)
			require.ErrorIs(t, err, httpstore.ErrInvalid, "%s %q", kind, tok)
			require.ErrorIs(t, err, store.ErrInvalid)
			require.Contains(t, err.Error(), kind)
			requireNoSecret(t, err, tok)
			require.Equal(t, 1, strings.Count(err.Error(), "invalid input"), "%v", err)
		}
		_, err := httpstore.New[*item]("http://localhost", httpstore.WithToken(tok))
		require.ErrorIs(t, err, httpstore.ErrInvalid, "client token %q", tok)
		requireNoSecret(t, err, tok)
	}
}

// requireNoSecret checks that err does not show tok's text.
func requireNoSecret(t *testing.T, err error, tok string) {
	t.Helper()
	if secret := strings.TrimSpace(tok); secret != "" {
		require.NotContains(t, err.Error(), secret)
		for _, part := range strings.FieldsFunc(secret, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			require.NotContains(t, err.Error(), part)
		}
	}
}
