package httpstore_test

import (
	"context"
	"errors"
	"net/http"
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
	for _, name := range []string{"Create", "Update", "Delete"} {
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
