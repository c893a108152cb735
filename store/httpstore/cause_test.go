package httpstore_test

import (
	"context"
	"testing"

	"github.com/converge-go/converge/store"
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
