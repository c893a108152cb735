// Package codecopt resolves the codec given to a byte backend's WithCodec
// option. Backend options are not generic (one Option type serves every
// value type), so WithCodec[T] stores its codec as any and the backend's
// constructor, which knows T, checks it here once.
package codecopt

import (
	"fmt"

	"github.com/converge-go/converge/internal/nilness"
	"github.com/converge-go/converge/store"
)

// Resolve returns the codec for values of type T: store.JSON when no codec
// was set, the one set if it encodes T, else an error matching
// store.ErrInvalid (a nil codec, or one of another type).
func Resolve[T any](set bool, codec any) (store.Codec[T], error) {
	if !set {
		return store.JSON[T]{}, nil
	}
	c, ok := codec.(store.Codec[T])
	if !ok || nilness.Is(c) {
		return nil, fmt.Errorf("%w: codec %T does not encode the store's value type", store.ErrInvalid, codec)
	}
	return c, nil
}
