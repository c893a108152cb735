package httpstore_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
	"github.com/stretchr/testify/require"
)

// answering serves body as the 200 answer to every request.
func answering(t *testing.T, body string) *httpstore.Client[*item] {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return client[*item](t, srv.URL)
}

// TestAnswerValuesDecodeAsTheCodecDecodesThem: the client decodes an
// answer's value in one pass with store.JSON, and gets what the codec alone
// would: null is the zero value, a missing or undecodable value is a
// protocol error, and the key of a write's answer must be the key written.
func TestAnswerValuesDecodeAsTheCodecDecodesThem(t *testing.T) {
	ctx := t.Context()
	obj, err := answering(t, `{"key":"k","value":{"n":3},"revision":5,"createRevision":2}`).Get(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, store.Object[*item]{Key: "k", Value: &item{N: 3}, Revision: 5, CreateRevision: 2}, obj)

	obj, err = answering(t, `{"key":"k","value":null,"revision":5,"createRevision":2}`).Get(ctx, "k")
	require.NoError(t, err)
	require.Nil(t, obj.Value)

	for _, body := range []string{
		`{"key":"k","revision":5,"createRevision":2}`,
		`{"key":"k","value":"not an item","revision":5,"createRevision":2}`,
		`{"key":"k","value":{"n":3},"revision":"5"}`,
	} {
		_, err = answering(t, body).Get(ctx, "k")
		require.ErrorIs(t, err, httpstore.ErrProtocol, body)
	}

	_, err = answering(t, `{"key":"other","value":{"n":3},"revision":5,"createRevision":2}`).Update(ctx, "k", &item{N: 3}, 4)
	require.ErrorIs(t, err, httpstore.ErrProtocol)
	require.ErrorIs(t, err, store.ErrUnavailable, "the write may have happened")
}

// TestAValueTheClientCannotDecodeIsAProtocolErrorNotUnavailable: a value
// the client's codec refuses (a client of another type than the server's)
// is ErrProtocol but not store.ErrUnavailable, since asking again would
// get the same value.
func TestAValueTheClientCannotDecodeIsAProtocolErrorNotUnavailable(t *testing.T) {
	_, err := answering(t, `{"key":"k","value":"not an item","revision":5,"createRevision":2}`).Get(t.Context(), "k")
	require.ErrorIs(t, err, httpstore.ErrProtocol)
	require.NotErrorIs(t, err, store.ErrUnavailable)
}
