package main

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/converge-go/converge/store"
)

// errCrashed is what every store call of a crashed replica returns.
var errCrashed = fmt.Errorf("%w: the replica has crashed", store.ErrUnavailable)

// crashable passes a replica's store calls through until the replica
// crashes; from then on every call fails at once, as if its process were
// gone: no renewal, no release and no write of the replica reaches etcd.
// (Closing the etcd client alone would not do: the client retries a call
// on a closed connection for seconds before it fails.)
type crashable[T any] struct {
	store.Store[T]
	crashed *atomic.Bool
}

func (c crashable[T]) check() error {
	if c.crashed.Load() {
		return errCrashed
	}
	return nil
}

// Get reads key unless the replica has crashed.
func (c crashable[T]) Get(ctx context.Context, key string) (store.Object[T], error) {
	if err := c.check(); err != nil {
		return store.Object[T]{}, err
	}
	return c.Store.Get(ctx, key)
}

// List lists prefix unless the replica has crashed.
func (c crashable[T]) List(ctx context.Context, prefix string) ([]store.Object[T], int64, error) {
	if err := c.check(); err != nil {
		return nil, 0, err
	}
	return c.Store.List(ctx, prefix)
}

// Create creates key unless the replica has crashed.
func (c crashable[T]) Create(ctx context.Context, key string, value T, guards ...store.Guard) (store.Object[T], error) {
	if err := c.check(); err != nil {
		return store.Object[T]{}, err
	}
	return c.Store.Create(ctx, key, value, guards...)
}

// Update updates key unless the replica has crashed.
func (c crashable[T]) Update(ctx context.Context, key string, value T, revision int64, guards ...store.Guard) (store.Object[T], error) {
	if err := c.check(); err != nil {
		return store.Object[T]{}, err
	}
	return c.Store.Update(ctx, key, value, revision, guards...)
}

// Delete deletes key unless the replica has crashed.
func (c crashable[T]) Delete(ctx context.Context, key string, revision int64, guards ...store.Guard) (int64, error) {
	if err := c.check(); err != nil {
		return 0, err
	}
	return c.Store.Delete(ctx, key, revision, guards...)
}

// Watch watches prefix unless the replica has crashed.
func (c crashable[T]) Watch(ctx context.Context, prefix string, after int64) (store.Watcher[T], error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	return c.Store.Watch(ctx, prefix, after)
}

// Revision reads the store's revision unless the replica has crashed.
func (c crashable[T]) Revision(ctx context.Context) (int64, error) {
	if err := c.check(); err != nil {
		return 0, err
	}
	return c.Store.Revision(ctx)
}
