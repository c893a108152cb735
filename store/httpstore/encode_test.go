package httpstore

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// TestAppendObjectReadsBackAsEncodingJSONWrites: the hand-written encoding
// of answers and watch frames decodes to the same object as encoding/json's,
// for keys with every kind of character JSON escapes, with "deleted" or
// without.
func TestAppendObjectReadsBackAsEncodingJSONWrites(t *testing.T) {
	keys := []string{"a", `q"uote`, `back\slash`, "tab\tnl\ncr\r", "ctl\x01\x1f\x7f", "html <>&", "line\u2028sep\u2029", "ünïcødé 日本", "bad\xffutf8"}
	for _, key := range keys {
		for i, compact := range []bool{true, false, true, false} {
			wo := wireObject{Key: key, Value: json.RawMessage(`{"n":1,"s":"x"}`), Revision: 7, CreateRevision: 3, Deleted: i >= 2}
			var buf bytes.Buffer
			require.NoError(t, appendObject(&buf, &wo, compact))
			want, err := json.Marshal(wo)
			require.NoError(t, err)
			var got, exp wireObject
			require.NoError(t, json.Unmarshal(buf.Bytes(), &got), "%q", buf.Bytes())
			require.NoError(t, json.Unmarshal(want, &exp))
			require.Equal(t, exp, got)

			buf.Reset()
			cause := ""
			if i%2 == 1 {
				cause = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
			}
			require.NoError(t, appendFrame(&buf, &frame{Type: frameUpdated, Object: &wo, Cause: cause}, compact))
			var f frame
			require.NoError(t, json.Unmarshal(buf.Bytes(), &f))
			require.Equal(t, frameUpdated, f.Type)
			require.Equal(t, exp, *f.Object)
			require.Equal(t, cause, f.Cause)
			require.Equal(t, byte('\n'), buf.Bytes()[buf.Len()-1], "a frame is one line")
		}
	}
}

// TestAppendObjectChecksValuesItIsNotToldAreCompactJSON: a codec's value
// is compacted as encoding/json does, and one that is not JSON is refused
// with nothing written, unless the value comes from a store that keeps
// encoding/json's bytes.
func TestAppendObjectChecksValuesItIsNotToldAreCompactJSON(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, appendObject(&buf, &wireObject{Key: "k", Value: json.RawMessage("{ \"n\" : 1 }")}, false))
	require.Contains(t, buf.String(), `"value":{"n":1}`)

	buf.Reset()
	require.NoError(t, appendFrame(&buf, &frame{Type: framePing}, false))
	require.Equal(t, "{\"type\":\"ping\"}\n", buf.String())
	n := buf.Len()
	require.Error(t, appendFrame(&buf, &frame{Type: frameCreated, Object: &wireObject{Key: "k", Value: json.RawMessage("{not json")}}, false))
	require.Equal(t, n, buf.Len(), "a refused frame leaves nothing behind")
}

type plainStore struct{ store.Store[int] }

type encodedStore struct {
	store.Store[int]
	codec store.Codec[int]
}

func (s encodedStore) Codec() store.Codec[int] { return s.codec }

type otherCodec struct{ store.JSON[int] }

// TestValuesSkipTheRoundTripCheckOnlyForStoresThatKeepJSON: the handler
// trusts plain encoding/json only when both the wire codec and the served
// store's codec are store.JSON.
func TestValuesSkipTheRoundTripCheckOnlyForStoresThatKeepJSON(t *testing.T) {
	m := store.NewMemory[int]()
	defer m.Close()
	require.False(t, newValueEncoder[int](m, store.JSON[int]{}).trusted, "a store that keeps Go values")
	require.False(t, newValueEncoder[int](plainStore{m}, store.JSON[int]{}).trusted)
	require.True(t, newValueEncoder[int](encodedStore{m, store.JSON[int]{}}, store.JSON[int]{}).trusted)
	require.False(t, newValueEncoder[int](encodedStore{m, otherCodec{}}, store.JSON[int]{}).trusted, "the store's codec is another")
	require.False(t, newValueEncoder[int](encodedStore{m, store.JSON[int]{}}, otherCodec{}).trusted, "the wire codec is another")
}
