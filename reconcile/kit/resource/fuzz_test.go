package resource_test

import (
	"context"
	"math"
	"strconv"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
)

// fuzzValue serves as both spec and status: typed fields, which must come
// back exactly, and a map[string]any, which comes back through JSON as
// maps, slices and float64 with the same encoding.
type fuzzValue struct {
	Message string
	Output  []byte
	Count   int64
	Ratio   float64
	Tags    []string
	Data    map[string]any
}

type fuzzResource = resource.Resource[fuzzValue, fuzzValue]

// opaqueFuzzStore is a codec-backed store that does not name its codec.
type opaqueFuzzStore struct{ store.Store[*fuzzResource] }

func fuzzStores() map[string]func() store.Store[*fuzzResource] {
	return map[string]func() store.Store[*fuzzResource]{
		"View": func() store.Store[*fuzzResource] {
			return store.NewView[*fuzzResource](store.NewMemory[[]byte](), nil)
		},
		"codec-backed, not named": func() store.Store[*fuzzResource] {
			return opaqueFuzzStore{store.NewView[*fuzzResource](store.NewMemory[[]byte](), nil)}
		},
		"Memory": func() store.Store[*fuzzResource] { return store.NewMemory[*fuzzResource]() },
	}
}

func newFuzzValue(s, key string, n int64, x float64, raw []byte) fuzzValue {
	v := fuzzValue{
		Message: s, Output: raw, Count: n, Ratio: x, Tags: []string{s, key},
		Data: map[string]any{"s": s, "x": x, "list": []any{n, s, map[string]any{"k": key, "raw": raw}}},
	}
	v.Data[key] = n
	return v
}

// jsonChanges reports whether JSON would not keep the value newFuzzValue
// builds from these inputs: a string that is not valid UTF-8, a number
// JSON cannot write, or an integer in an interface that reads back as a
// float64 written differently.
func jsonChanges(s, key string, n int64, x float64) bool {
	exact := strconv.FormatFloat(float64(n), 'f', -1, 64) == strconv.FormatInt(n, 10)
	return !utf8.ValidString(s) || !utf8.ValidString(key) || math.IsNaN(x) || math.IsInf(x, 0) || !exact
}

// storedAsWritten asserts that got is what a store of the given kind
// promises for want: the same value in memory; on a codec-backed store the
// same typed fields and the same encoding.
func storedAsWritten(t *testing.T, codec bool, want, got fuzzValue) {
	t.Helper()
	if !codec {
		assert.True(t, cmp.Equal(want, got, cmpopts.EquateNaNs()), "memory must keep the value: %s", cmp.Diff(want, got, cmpopts.EquateNaNs()))
		return
	}
	assert.Equal(t, want.Message, got.Message)
	assert.Equal(t, want.Output, got.Output)
	assert.Equal(t, want.Count, got.Count)
	assert.Equal(t, want.Ratio, got.Ratio)
	assert.Equal(t, want.Tags, got.Tags)
	encodes(t, want, got)
}

// FuzzResourceSettlesOrRefusesThroughEveryStore checks, for arbitrary specs
// and statuses (strings of any bytes, numbers inside map[string]any, nested
// values), on a View over memory bytes, on a codec-backed store that does
// not name its codec and on the in-memory store: PutSpec and WriteStatus
// either refuse with store.ErrInvalid and write nothing (only on a
// codec-backed store, and exactly when JSON would change the value), or
// write once, find the same value unchanged afterwards, and Get returns
// what was written.
func FuzzResourceSettlesOrRefusesThroughEveryStore(f *testing.F) {
	f.Add("ready", "pid", int64(4242), 0.5, []byte("log line"))
	f.Add("exit 1: \xff\xfe", "code", int64(1), 1.0, []byte{0xff})
	f.Add("ok", "bad\xc3", int64(0), 0.0, []byte(nil))
	f.Add("\uFFFD is fine", "\u2028<&>", int64(1)<<53, math.Copysign(0, -1), []byte{})
	f.Add("big", "n", int64(1)<<60+1, 1e300, []byte{0})
	f.Add("limit", "max", int64(math.MaxInt64), math.SmallestNonzeroFloat64, []byte("x"))
	f.Add("nan", "x", int64(-1), math.NaN(), []byte(nil))
	f.Add("inf", "s", int64(7), math.Inf(-1), []byte(nil))
	f.Fuzz(func(t *testing.T, s, key string, n int64, x float64, raw []byte) {
		v := newFuzzValue(s, key, n, x, raw)
		refused := jsonChanges(s, key, n, x)
		for name, newStore := range fuzzStores() {
			codec := codecBacked(name)
			t.Run(name+"/PutSpec", func(t *testing.T) { checkPutSpec(t, newStore(), codec, codec && refused, v) })
			t.Run(name+"/WriteStatus", func(t *testing.T) { checkWriteStatus(t, newStore(), codec, codec && refused, v) })
		}
	})
}

func fuzzRevision(t *testing.T, s store.Store[*fuzzResource]) int64 {
	t.Helper()
	rev, err := s.Revision(context.Background())
	require.NoError(t, err)
	return rev
}

func checkPutSpec(t *testing.T, s store.Store[*fuzzResource], codec, refused bool, spec fuzzValue) {
	ctx := context.Background()
	_, err := resource.PutSpec(ctx, s, "r/spec", spec)
	if refused {
		require.ErrorIs(t, err, store.ErrInvalid, "a spec JSON would change must be refused")
		assert.Equal(t, int64(0), fuzzRevision(t, s), "a refused spec must write nothing")
		return
	}
	require.NoError(t, err)
	for range 2 {
		_, err = resource.PutSpec(ctx, s, "r/spec", spec)
		require.NoError(t, err)
	}
	assert.Equal(t, int64(1), fuzzRevision(t, s), "the same spec must be written exactly once")
	got, err := s.Get(ctx, "r/spec")
	require.NoError(t, err)
	assert.Equal(t, int64(1), got.Value.Generation)
	storedAsWritten(t, codec, spec, got.Value.Spec)
}

func checkWriteStatus(t *testing.T, s store.Store[*fuzzResource], codec, refused bool, status fuzzValue) {
	ctx := context.Background()
	obj, err := resource.PutSpec(ctx, s, "r/status", fuzzValue{Message: "spec"})
	require.NoError(t, err)
	_, err = resource.WriteStatus(ctx, s, obj, status)
	if refused {
		require.ErrorIs(t, err, store.ErrInvalid, "a status JSON would change must be refused")
		assert.Equal(t, obj.Revision, fuzzRevision(t, s), "a refused status must write nothing")
		return
	}
	require.NoError(t, err)
	for range 2 {
		cur, err := s.Get(ctx, "r/status")
		require.NoError(t, err)
		_, err = resource.WriteStatus(ctx, s, cur, status)
		require.NoError(t, err)
	}
	assert.Equal(t, obj.Revision+1, fuzzRevision(t, s), "the same status must be written exactly once")
	got, err := s.Get(ctx, "r/status")
	require.NoError(t, err)
	assert.Equal(t, got.Value.Generation, got.Value.ObservedGeneration)
	storedAsWritten(t, codec, status, got.Value.Status)
}
