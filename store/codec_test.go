package store_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/store"
)

type codecDoc struct {
	Name  string
	Raw   []byte
	Tags  []string
	Data  map[string]any
	When  time.Time
	Inner *codecDoc `json:",omitempty"`
	Any   any       `json:",omitempty"`
}

// unsorted encodes its fields in an order that a map, which is what JSON
// decodes it into when held in an interface, does not keep.
type unsorted struct{ B, A int }

func TestJSONCodecRefusesInvalidUTF8Anywhere(t *testing.T) {
	bad := "output: \xff\xfe done"
	cases := map[string]codecDoc{
		"string field":           {Name: bad},
		"slice element":          {Tags: []string{"ok", bad}},
		"map key":                {Data: map[string]any{bad: 1}},
		"string in an interface": {Data: map[string]any{"out": bad}},
		"nested deep":            {Inner: &codecDoc{Data: map[string]any{"l": []any{map[string]any{"x": bad}}}}},
		"lone continuation byte": {Name: "\x80"},
		"truncated rune":         {Name: "\xe2\x82"},
	}
	for name, v := range cases {
		t.Run(name, func(t *testing.T) {
			b, err := store.JSON[codecDoc]{}.Marshal(v)
			require.ErrorIs(t, err, store.ErrInvalid, "invalid UTF-8 must be refused, not stored as U+FFFD")
			assert.Contains(t, err.Error(), "invalid UTF-8")
			assert.Nil(t, b)
		})
	}
}

func TestJSONCodecRefusesValuesThatWouldReadBackDifferently(t *testing.T) {
	cases := map[string]codecDoc{
		"integer beyond 2^53 in an interface": {Data: map[string]any{"n": int64(1)<<60 + 1}},
		"struct in an interface":              {Any: unsorted{B: 1, A: 2}},
	}
	for name, v := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := store.JSON[codecDoc]{}.Marshal(v)
			require.ErrorIs(t, err, store.ErrInvalid)
			assert.Contains(t, err.Error(), "would not read back as written")
		})
	}
}

func TestJSONCodecRefusesWhatJSONCannotEncode(t *testing.T) {
	_, err := store.JSON[codecDoc]{}.Marshal(codecDoc{Data: map[string]any{"f": math.NaN()}})
	require.ErrorIs(t, err, store.ErrInvalid)
	_, err = store.JSON[codecDoc]{}.Marshal(codecDoc{Data: map[string]any{"c": make(chan int)}})
	require.ErrorIs(t, err, store.ErrInvalid)
}

func TestJSONCodecAcceptedValuesReadBackWithTheSameEncoding(t *testing.T) {
	cases := map[string]codecDoc{
		"empty":                        {},
		"U+FFFD written as a rune":     {Name: "a\uFFFDb"},
		"escaped runes":                {Name: "<a href=\"x\">&\u2028\u2029\t\x00</a>"},
		"arbitrary bytes as []byte":    {Raw: []byte{0xff, 0x00, 0xfe, 0x80}},
		"numbers in an interface":      {Data: map[string]any{"i": 1, "big": int64(1) << 53, "neg": -7, "f": 0.1, "z": math.Copysign(0, -1)}},
		"nested values":                {Data: map[string]any{"l": []any{1, "x", true, nil, map[string]any{"k": []any{}}}}},
		"time with a zone":             {When: time.Date(2030, 1, 2, 3, 4, 5, 6, time.FixedZone("X", 3600))},
		"nil and empty collections":    {Tags: []string{}, Data: map[string]any{}},
		"map in an interface":          {Any: map[string]any{"b": 1, "a": 2}},
		"pointer to a nested document": {Inner: &codecDoc{Name: "in", Tags: []string{"t"}}},
	}
	codec := store.JSON[codecDoc]{}
	for name, v := range cases {
		t.Run(name, func(t *testing.T) {
			b, err := codec.Marshal(v)
			require.NoError(t, err)
			plain, err := json.Marshal(v)
			require.NoError(t, err)
			assert.Equal(t, string(plain), string(b), "the codec must write what encoding/json writes")
			back, err := codec.Unmarshal(b)
			require.NoError(t, err)
			again, err := codec.Marshal(back)
			require.NoError(t, err)
			assert.Equal(t, string(b), string(again))
		})
	}
}

func TestViewRefusesInvalidUTF8AndStoresNothing(t *testing.T) {
	ctx := t.Context()
	raw := store.NewMemory[[]byte]()
	v := store.NewView[codecDoc](raw, nil)
	created, err := v.Create(ctx, "docs/a", codecDoc{Name: "fine"})
	require.NoError(t, err)

	_, err = v.Create(ctx, "docs/b", codecDoc{Name: "bad\xff"})
	require.ErrorIs(t, err, store.ErrInvalid)
	_, err = v.Update(ctx, "docs/a", codecDoc{Name: "bad\xff"}, created.Revision)
	require.ErrorIs(t, err, store.ErrInvalid)

	rev, err := raw.Revision(ctx)
	require.NoError(t, err)
	assert.Equal(t, created.Revision, rev, "a refused value must not be written")
	got, err := v.Get(ctx, "docs/a")
	require.NoError(t, err)
	assert.Equal(t, "fine", got.Value.Name)
}

type otherCodec struct{ store.JSON[codecDoc] }

func TestViewReportsTheCodecItEncodesWith(t *testing.T) {
	raw := store.NewMemory[[]byte]()
	var enc store.Encoded[codecDoc] = store.NewView[codecDoc](raw, nil)
	assert.Equal(t, store.Codec[codecDoc](store.JSON[codecDoc]{}), enc.Codec(), "a nil codec means JSON")
	enc = store.NewView[codecDoc](raw, otherCodec{})
	assert.Equal(t, store.Codec[codecDoc](otherCodec{}), enc.Codec())
}

// FuzzJSONCodec checks the codec's promise on arbitrary strings and numbers:
// it refuses exactly the values JSON would change (invalid UTF-8, integers
// in an interface that a float64 cannot hold), and everything else reads
// back as a value with the same encoding and the same typed fields.
func FuzzJSONCodec(f *testing.F) {
	f.Add("plain", "key", int64(42), []byte("raw"))
	f.Add("bad\xff", "k", int64(1), []byte{0xff})
	f.Add("ok", "\xc3", int64(-3), []byte(nil))
	f.Add("\uFFFD", "\u2028", int64(1)<<60+1, []byte{})
	f.Add("<&>", "", int64(math.MaxInt64), []byte{0})
	codec := store.JSON[codecDoc]{}
	f.Fuzz(func(t *testing.T, s, key string, n int64, raw []byte) {
		v := codecDoc{Name: s, Raw: raw, Tags: []string{key}, Data: map[string]any{"s": s}}
		v.Data[key] = n
		b, err := codec.Marshal(v)
		exact := strconv.FormatFloat(float64(n), 'f', -1, 64) == strconv.FormatInt(n, 10)
		if !utf8.ValidString(s) || !utf8.ValidString(key) || !exact {
			require.ErrorIs(t, err, store.ErrInvalid, "a value JSON would change must be refused")
			return
		}
		require.NoError(t, err)
		back, err := codec.Unmarshal(b)
		require.NoError(t, err)
		assert.Equal(t, s, back.Name)
		assert.True(t, bytes.Equal(raw, back.Raw), "[]byte must round-trip exactly")
		assert.Equal(t, []string{key}, back.Tags)
		again, err := codec.Marshal(back)
		require.NoError(t, err)
		assert.Equal(t, string(b), string(again))
	})
}

var sinkBytes []byte

// BenchmarkJSONMarshal compares the codec, which verifies the round trip,
// with encoding/json alone, on a typical resource-sized value.
func BenchmarkJSONMarshal(b *testing.B) {
	v := codecDoc{
		Name: "apps/web", Tags: []string{"a", "b", "c"},
		Data: map[string]any{"replicas": 3, "image": "web:1.2.3", "ports": []any{80, 443}, "ratio": 0.75},
		When: time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC),
	}
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			sinkBytes, _ = json.Marshal(v)
		}
	})
	b.Run("store.JSON", func(b *testing.B) {
		codec := store.JSON[codecDoc]{}
		for b.Loop() {
			sinkBytes, _ = codec.Marshal(v)
		}
	})
}
