package lock

import (
	"context"
	"fmt"
	"slices"

	"github.com/converge-go/converge/internal/nilness"
	"github.com/converge-go/converge/store"
)

// Fenced returns a view of s whose writes are fenced by lk: each carries
// lk's Guard, so the store rejects it with store.ErrGuardFailed once
// another term has begun, and a write attempted after lk's context ended
// fails with store.ErrGuardFailed without reaching the store. Reads pass
// through. It is for code that writes on behalf of a term outside a
// reconcile (a controller's Request.Store already fences its writes).
//
// Fenced returns an error matching ErrInvalid if s or lk is nil.
func Fenced[T any](s store.Store[T], lk Lock) (store.Store[T], error) {
	if nilness.Is(s) || nilness.Is(lk) {
		return nil, fmt.Errorf("%w: Fenced needs a store and a lock", ErrInvalid)
	}
	return &fenced[T]{Store: s, lk: lk}, nil
}

type fenced[T any] struct {
	store.Store[T]
	lk Lock
}

var _ store.Checker = (*fenced[int])(nil)

func (f *fenced[T]) guards(guards []store.Guard) ([]store.Guard, error) {
	if err := f.lk.Context().Err(); err != nil {
		return nil, fmt.Errorf("%w: the term of token %d is over", store.ErrGuardFailed, f.lk.Token())
	}
	return append(slices.Clip(guards), f.lk.Guard()), nil
}

func (f *fenced[T]) Create(ctx context.Context, key string, value T, guards ...store.Guard) (store.Object[T], error) {
	g, err := f.guards(guards)
	if err != nil {
		return store.Object[T]{}, err
	}
	return f.Store.Create(ctx, key, value, g...)
}

func (f *fenced[T]) Update(ctx context.Context, key string, value T, revision int64, guards ...store.Guard) (store.Object[T], error) {
	g, err := f.guards(guards)
	if err != nil {
		return store.Object[T]{}, err
	}
	return f.Store.Update(ctx, key, value, revision, g...)
}

// Check checks with lk's guard added (store.Checker), so that a write
// that changes nothing (store.Modify's) is still refused once another
// term has begun.
func (f *fenced[T]) Check(ctx context.Context, key string, revision int64, guards ...store.Guard) error {
	g, err := f.guards(guards)
	if err != nil {
		return err
	}
	return store.Check(ctx, f.Store, key, revision, g...)
}

func (f *fenced[T]) Delete(ctx context.Context, key string, revision int64, guards ...store.Guard) (int64, error) {
	g, err := f.guards(guards)
	if err != nil {
		return 0, err
	}
	return f.Store.Delete(ctx, key, revision, g...)
}
