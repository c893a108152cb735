package store

import (
	"bytes"
	"fmt"
	"reflect"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Unchanged reports whether writing next over cur, a value read from s,
// would leave s holding what it holds, so that the write can be skipped
// (Modify, CreateOrUpdate, the API-server layer and reconcile/kit/resource's
// helpers skip it so).
//
// Values equal by Equal are unchanged everywhere. A store that keeps
// values encoded may not keep a Go value exactly (JSON reads a number held
// in an interface back as a float64), so a value that differs from what
// was written may still be what the store holds: there, values are also
// unchanged when their encodings are the same bytes. That is judged with
// the store's codec if it says which (Encoded, as a View, store/boltstore,
// store/etcdstore and store/httpstore's client do; a nil codec means the
// store keeps Go values); with JSON for a store that does not; and not at
// all for a *Memory, which keeps Go values as they are.
//
// With the store's codec, a next that the codec refuses returns its error
// (matching ErrInvalid), since the write would fail the same way. Because
// a codec's encoding survives a round trip (see Codec), a value written
// once is then unchanged against what reads back, and a caller that writes
// only when Unchanged is false writes once, not for ever.
func Unchanged[T any](s Store[T], cur, next T) (bool, error) {
	same, cmpErr := Equal(cur, next)
	if same {
		return true, nil
	}
	switch s := s.(type) {
	case *Memory[T]:
		return false, cmpErr
	case Encoded[T]:
		codec := s.Codec()
		if codec == nil {
			return false, cmpErr
		}
		nextBytes, err := codec.Marshal(next)
		if err != nil {
			return false, err
		}
		// A stored value that no longer encodes (written by an older
		// version, say) is replaced by one that does.
		curBytes, err := codec.Marshal(cur)
		return err == nil && bytes.Equal(curBytes, nextBytes), nil
	default:
		// The store may keep values some other way: a value JSON cannot
		// keep is judged by Equal alone, and the store's own write
		// decides whether it is valid.
		codec := JSON[T]{}
		nextBytes, err := codec.Marshal(next)
		if err != nil {
			return false, cmpErr
		}
		curBytes, err := codec.Marshal(cur)
		if err != nil {
			return false, cmpErr
		}
		return bytes.Equal(curBytes, nextBytes), nil
	}
}

// Equal compares values with go-cmp, reading unexported fields, treating
// nil and empty slices and maps as equal (as a JSON round trip may turn
// one into the other) and a NaN as equal to a NaN (else a value holding
// one would never be found unchanged). A value go-cmp cannot compare is
// reported as unequal with an error matching ErrInvalid, never a panic.
func Equal[V any](a, b V) (equal bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			equal, err = false, fmt.Errorf("%w: cannot compare values of type %s: %v", ErrInvalid, reflect.TypeFor[V](), p)
		}
	}()
	return cmp.Equal(a, b, cmpopts.EquateEmpty(), cmpopts.EquateNaNs(), cmp.Exporter(func(reflect.Type) bool { return true })), nil
}
