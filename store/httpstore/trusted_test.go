package httpstore_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore/httpstoretest"
	"github.com/stretchr/testify/require"
)

// TestServedJSONStoreAnswersAWriteWithTheBytesItKeeps: over a store that
// keeps store.JSON bytes (the handler then encodes values with plain
// encoding/json and leaves the round-trip check to the store), a write sent
// in a non-canonical form is answered, read and watched as exactly the
// bytes the store keeps.
func TestServedJSONStoreAnswersAWriteWithTheBytesItKeeps(t *testing.T) {
	raw := store.NewMemory[[]byte]()
	defer raw.Close()
	view := store.NewView[map[string]any](raw, store.JSON[map[string]any]{})
	served := httpstoretest.Serve[map[string]any](t, view, httpstoretest.Options{})
	ctx := t.Context()
	obj, err := served.Create(ctx, "k", map[string]any{"n": 1})
	require.NoError(t, err)
	w, err := served.Watch(ctx, "", obj.Revision)
	require.NoError(t, err)
	defer w.Stop()

	q := url.Values{"key": {"k"}, "revision": {strconv.FormatInt(obj.Revision, 10)}}
	resp, err := http.Post(served.Server.URL+"/v1/update?"+q.Encode(), "application/json",
		bytes.NewReader([]byte(`{ "s" : "<&>",  "n" : 1.0e0, "l": [1, 2 ] }`)))
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	var answer struct {
		Value    json.RawMessage `json:"value"`
		Revision int64           `json:"revision"`
	}
	require.NoError(t, json.Unmarshal(body, &answer))

	stored, err := raw.Get(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, stored.Revision, answer.Revision)
	require.Equal(t, string(stored.Value), string(answer.Value), "the answer carries the stored bytes")

	got, err := served.Get(ctx, "k")
	require.NoError(t, err)
	want := map[string]any{"s": "<&>", "n": 1.0, "l": []any{1.0, 2.0}}
	require.Equal(t, want, got.Value)
	ev := <-w.Events()
	require.Equal(t, store.Updated, ev.Type)
	require.Equal(t, want, ev.Object.Value)
}
