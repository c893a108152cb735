package store

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Codec turns values into bytes and back, for backends that persist bytes
// (bbolt, etcd, View). The in-memory store never serialises.
//
// A Codec must be deterministic and must not change a value silently:
// Marshal either refuses a value with an error matching ErrInvalid, or
// returns bytes that decode to a value whose encoding is the same bytes
// again (Marshal(Unmarshal(Marshal(v))) == Marshal(v)). Code that must tell
// whether a write would change what a store holds (the reconcile package's
// Resource helpers) compares encodings, and relies on this: with a codec
// that breaks it, a write can be repeated for ever.
type Codec[T any] interface {
	Marshal(v T) ([]byte, error)
	Unmarshal(data []byte) (T, error)
}

// Encoded is implemented by stores that keep their values encoded by a
// Codec. Codec returns that codec, so that callers can judge a write by the
// bytes the store would keep rather than by Go values, which a codec may not
// keep exactly (JSON decodes a number inside a map[string]any as a float64).
type Encoded[T any] interface {
	Codec() Codec[T]
}

var _ Encoded[int] = (*View[int])(nil)

// Codec returns the codec that encodes the view's values.
func (v *View[T]) Codec() Codec[T] { return v.codec }

// JSON is the default Codec: encoding/json, refusing what JSON cannot keep.
//
// encoding/json on its own changes some values silently: it writes invalid
// UTF-8 in a string as U+FFFD, rounds integers beyond 2^53 held in an
// interface to the nearest float64, and decodes a struct held in an
// interface as a map whose keys it then writes in another order. A value
// stored that way reads back as something else, and a controller that
// compares what it reads with what it means to write rewrites it for ever.
// So Marshal checks that the encoding survives a round trip: it decodes the
// bytes into a new T and encodes that again, and refuses the value, with an
// error matching ErrInvalid, unless the bytes are the same. What passes
// reads back as a value with exactly the same encoding (a number inside a
// map[string]any still comes back as a float64: compare encodings, not Go
// values).
//
// The check costs one decode and one encode more than encoding/json alone:
// about five times the time and four times the allocations of a plain
// Marshal (some 15 µs instead of 3 µs for a resource-sized value, see
// BenchmarkJSONMarshal), small beside a bbolt commit or an etcd round trip.
type JSON[T any] struct{}

// Marshal encodes v as JSON, or returns an error matching ErrInvalid if v
// cannot be encoded or would not read back as a value with the same
// encoding.
func (JSON[T]) Marshal(v T) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: encode value: %v", ErrInvalid, err)
	}
	var back T
	if err := json.Unmarshal(b, &back); err != nil {
		return nil, fmt.Errorf("%w: encode value: the encoding does not decode: %v", ErrInvalid, err)
	}
	again, err := json.Marshal(back)
	if err != nil {
		return nil, fmt.Errorf("%w: encode value: the decoded value does not encode: %v", ErrInvalid, err)
	}
	if !bytes.Equal(b, again) {
		return nil, roundTripError(b, again)
	}
	return b, nil
}

// Unmarshal decodes JSON into a new T.
func (JSON[T]) Unmarshal(data []byte) (T, error) {
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return v, fmt.Errorf("store: decode value: %w", err)
	}
	return v, nil
}

// replacement is how encoding/json writes a byte that is not valid UTF-8.
var replacement = []byte(`\ufffd`)

// roundTripError explains why an encoding b, decoded and encoded again as
// again, did not survive: it names invalid UTF-8 when that is the cause, and
// otherwise shows where the two encodings part.
func roundTripError(b, again []byte) error {
	i := 0
	for i < len(b) && i < len(again) && b[i] == again[i] {
		i++
	}
	if bytes.HasPrefix(b[i:], replacement) {
		return fmt.Errorf("%w: encode value: a string holds invalid UTF-8 (near %s), which JSON would store as U+FFFD: encode such data as []byte or check it with utf8.ValidString", ErrInvalid, excerpt(b, i))
	}
	return fmt.Errorf("%w: encode value: the value would not read back as written: its JSON %s decodes to a value encoded as %s (a struct or a number beyond 2^53 held in an interface?)", ErrInvalid, excerpt(b, i), excerpt(again, i))
}

// excerpt quotes the bytes of b around offset i.
func excerpt(b []byte, i int) string {
	const span = 24
	lo, hi := max(i-span, 0), min(i+span, len(b))
	pre, post := "", ""
	if lo > 0 {
		pre = "…"
	}
	if hi < len(b) {
		post = "…"
	}
	return fmt.Sprintf("%q at byte %d", pre+string(b[lo:hi])+post, i)
}
