package apistore

import (
	"context"
	"errors"
	"fmt"

	"github.com/converge-go/converge/store"
)

// Create stores value at key if the key does not exist, with generation 1
// and no deletion mark whatever value says, its finalizers and owners as
// written. The object returned carries the value as stored.
//
// A key that exists fails with store.ErrExists; if it is marked for
// deletion (its finalizers have yet to run), the error matches ErrDeleting
// as well, so that a client can tell "wait until it is gone" from "it is
// there". A value whose metadata the Kind cannot read, or the layer
// refuses (see ValidateFinalizer), fails with store.ErrInvalid; one the
// key's Admission refuses, with ErrRejected (see Admission): nothing is
// stored. Guards pass through to the wrapped store's write.
func (s *Store[T]) Create(ctx context.Context, key string, value T, guards ...store.Guard) (store.Object[T], error) {
	if err := s.checkWrite(ctx, key, &value, 0, guards); err != nil {
		return store.Object[T]{}, err
	}
	value, m, err := s.admitCreate(key, value)
	if err != nil {
		return store.Object[T]{}, err
	}
	m.Generation, m.Deletion = 1, nil
	v, err := s.kind.WithMeta(value, m)
	if err != nil {
		return store.Object[T]{}, fmt.Errorf("%w: apistore: %w", store.ErrInvalid, err)
	}
	obj, err := s.inner.Create(ctx, key, v, guards...)
	if errors.Is(err, store.ErrExists) && s.marked(ctx, key) {
		return obj, fmt.Errorf("%w: %w", ErrDeleting, err)
	}
	return obj, err
}

// marked reports whether the object at key is marked for deletion, as far
// as a read tells: false if it cannot be read.
func (s *Store[T]) marked(ctx context.Context, key string) bool {
	cur, err := s.inner.Get(ctx, key)
	if err != nil {
		return false
	}
	m, err := s.kind.Meta(cur.Value)
	return err == nil && m.Deleting()
}
