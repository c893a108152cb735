package store

import (
	"encoding/json"
	"fmt"
)

// Codec turns values into bytes and back, for backends that persist bytes
// (bbolt, etcd). The in-memory store never serialises.
type Codec[T any] interface {
	Marshal(v T) ([]byte, error)
	Unmarshal(data []byte) (T, error)
}

// JSON is the default Codec: encoding/json.
type JSON[T any] struct{}

// Marshal encodes v as JSON.
func (JSON[T]) Marshal(v T) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: encode value: %v", ErrInvalid, err)
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
