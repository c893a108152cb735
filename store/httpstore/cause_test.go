package httpstore_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/httpstore"
	"github.com/converge-go/converge/store/httpstore/httpstoretest"
	"github.com/converge-go/converge/store/storetest"
	"github.com/stretchr/testify/require"
)

// TestWithCauseOfAWriteCarriesTheCauseItsContextYields: a client made
// with WithCauseOf sends, for a write whose context carries no cause,
// what the function makes of the context (a value that is no traceparent
// is not sent); a cause the context carries wins. A nil function is
// refused.
func TestWithCauseOfAWriteCarriesTheCauseItsContextYields(t *testing.T) {
	const fromCtx = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	const given = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"
	type spanKey struct{}
	m := store.NewMemory[*storetest.Value]()
	t.Cleanup(func() { _ = m.Close() })
	srv := httpstoretest.Serve[*storetest.Value](t, m, httpstoretest.Options{}).Server
	c := client[*storetest.Value](t, srv.URL, httpstore.WithCauseOf(func(ctx context.Context) string {
		s, _ := ctx.Value(spanKey{}).(string)
		return s
	}))
	w, err := m.Watch(t.Context(), "", 0)
	require.NoError(t, err)
	defer w.Stop()
	ctx := context.WithValue(t.Context(), spanKey{}, fromCtx)
	_, err = c.Create(ctx, "a", &storetest.Value{N: 1})
	require.NoError(t, err)
	_, err = c.Create(store.WithCause(ctx, given), "b", &storetest.Value{N: 1})
	require.NoError(t, err)
	_, err = c.Create(context.WithValue(t.Context(), spanKey{}, "not one"), "c", &storetest.Value{N: 1})
	require.NoError(t, err)
	for _, want := range []string{fromCtx, given, ""} {
		require.Equal(t, want, storetest.NextEvent(t, w).Cause)
	}
	_, err = httpstore.New[int](srv.URL, httpstore.WithCauseOf(nil))
	require.ErrorIs(t, err, store.ErrInvalid)
}

// TestAnyHTTPClientsTraceparentHeaderIsTheCauseOfItsWrite: a write by
// plain HTTP (as curl sends it) with a traceparent header has it recorded
// with its revision, on every write route (apply, status, update, delete
// included); a header that is no traceparent, or one on a read, records
// nothing.
func TestAnyHTTPClientsTraceparentHeaderIsTheCauseOfItsWrite(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	m := store.NewMemory[json.RawMessage]()
	t.Cleanup(func() { _ = m.Close() })
	c := httpstoretest.ServeLayer(t, m, apistore.JSONKind{}, httpstoretest.Options{})
	w, err := m.Watch(t.Context(), "", 0)
	require.NoError(t, err)
	defer w.Stop()
	send := func(path, header, body string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, c.Server.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		if header != "" {
			req.Header.Set("traceparent", header)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Less(t, resp.StatusCode, 300, path)
	}
	send("/v1/create?key=a", tp, `{"spec":{"n":1}}`)
	send("/v1/apply?key=a", tp, `{"spec":{"n":2}}`)
	send("/v1/status?key=a&revision=2", tp, `{"status":{"ready":true}}`)
	send("/v1/update?key=a&revision=3", "not-a-traceparent", `{"spec":{"n":3}}`)
	send("/v1/delete?key=a&revision=4", tp, ``)
	for i, want := range []string{tp, tp, tp, "", tp} {
		ev := storetest.NextEvent(t, w)
		require.Equal(t, want, ev.Cause, "event %d (%v)", i+1, ev.Type)
	}
}
