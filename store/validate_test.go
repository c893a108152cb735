package store_test

import (
	"strings"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// ValidateKey refuses empty, oversized, invalid-UTF-8 and NUL-carrying keys
// with ErrInvalid saying which, and accepts the rest; ValidatePrefix accepts
// the empty prefix.
func TestValidateKeyRefusesEmptyOversizedNonUTF8AndNULKeys(t *testing.T) {
	for key, want := range map[string]string{
		"":                                     "empty key",
		strings.Repeat("x", store.MaxKeyLen+1): "exceeds the maximum",
		"a\xffb":                               "not valid UTF-8",
		"a\x00b":                               "NUL byte",
	} {
		err := store.ValidateKey(key)
		require.ErrorIs(t, err, store.ErrInvalid)
		require.ErrorContains(t, err, want)
	}
	for _, key := range []string{"a", "a/b/c", "é∂", strings.Repeat("x", store.MaxKeyLen)} {
		require.NoError(t, store.ValidateKey(key))
	}
	require.NoError(t, store.ValidatePrefix(""))
	require.ErrorIs(t, store.ValidatePrefix("\xff"), store.ErrInvalid)
}

// ValidateValue refuses nil pointers, slices, maps, interfaces, funcs and
// channels with ErrInvalid naming the type, and accepts zero values that are
// not nil.
func TestValidateValueRefusesNilButAcceptsOtherZeroValues(t *testing.T) {
	require.ErrorIs(t, store.ValidateValue[*int](nil), store.ErrInvalid)
	require.ErrorIs(t, store.ValidateValue[[]int](nil), store.ErrInvalid)
	require.ErrorIs(t, store.ValidateValue[map[string]int](nil), store.ErrInvalid)
	require.ErrorIs(t, store.ValidateValue[any](nil), store.ErrInvalid)
	require.ErrorIs(t, store.ValidateValue[func()](nil), store.ErrInvalid)
	require.ErrorIs(t, store.ValidateValue[chan int](nil), store.ErrInvalid)
	require.ErrorContains(t, store.ValidateValue[*int](nil), "*int")

	require.NoError(t, store.ValidateValue(0))
	require.NoError(t, store.ValidateValue(""))
	require.NoError(t, store.ValidateValue([]int{}))
	require.NoError(t, store.ValidateValue(new(int)))
	require.NoError(t, store.ValidateValue[any](0))
	require.NoError(t, store.ValidateValue(struct{}{}))
}

func TestValidateDoesNotAllocate(t *testing.T) {
	p, s, m := new(int), []int{1}, map[int]int{}
	for name, f := range map[string]func(){
		"ValidateKey":        func() { _ = store.ValidateKey("some/key") },
		"ValidateValue ptr":  func() { _ = store.ValidateValue(p) },
		"ValidateValue map":  func() { _ = store.ValidateValue(m) },
		"ValidateValue slic": func() { _ = store.ValidateValue(s) },
		"ValidateGuards":     func() { _ = store.ValidateGuards([]store.Guard{{Key: "a", Revision: 1}}) },
		"ValidateRevision":   func() { _ = store.ValidateRevision(3) },
	} {
		require.Zero(t, testing.AllocsPerRun(100, f), name)
	}
}

// Guards with an empty key or a negative revision, and negative revisions,
// are ErrInvalid; no guards and revision 0 are valid.
func TestValidateGuardsAndRevisionRefuseEmptyKeysAndNegativeRevisions(t *testing.T) {
	require.NoError(t, store.ValidateGuards(nil))
	require.ErrorIs(t, store.ValidateGuards([]store.Guard{{Key: "a"}, {Key: ""}}), store.ErrInvalid)
	require.ErrorIs(t, store.ValidateGuards([]store.Guard{{Key: "a", Revision: -1}}), store.ErrInvalid)
	require.NoError(t, store.ValidateRevision(0))
	require.ErrorIs(t, store.ValidateRevision(-1), store.ErrInvalid)
}

// Every event type has its name, and an unknown one shows its number.
func TestEventTypeStringNamesEveryTypeAndNumbersUnknownOnes(t *testing.T) {
	require.Equal(t, "Created", store.Created.String())
	require.Equal(t, "Updated", store.Updated.String())
	require.Equal(t, "Deleted", store.Deleted.String())
	require.Equal(t, "EventType(9)", store.EventType(9).String())
}
