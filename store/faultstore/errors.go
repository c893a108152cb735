package faultstore

import (
	"errors"
	"fmt"

	"github.com/converge-go/converge/store"
)

// ErrNotSent matches every error a Store makes up before the call reaches
// the wrapped store: such a call had no effect there. It is always wrapped
// together with the store error the fault stands for.
var ErrNotSent = errors.New("faultstore: call not sent to the store")

// notSent returns an error matching ErrNotSent and cause.
func notSent(op Op, cause error, what string) error {
	return fmt.Errorf("%w: %s: %w (injected %s)", ErrNotSent, op, cause, what)
}

// LostResponseError is returned for a write that reached the wrapped store
// and whose response was then discarded (the Lose fault). It matches
// store.ErrUnavailable and only that, whatever the store answered: the
// caller must not learn the outcome. Its fields keep the real answer for
// checkers that know what happened.
type LostResponseError[T any] struct {
	Op Op
	// Object is what Create or Update returned (zero for Delete).
	Object store.Object[T]
	// Revision is what Delete returned (0 for Create and Update).
	Revision int64
	// Err is the error the wrapped store returned, nil if the write
	// succeeded.
	Err error
}

// Error says that the response was lost, not what it was.
func (e *LostResponseError[T]) Error() string {
	return fmt.Sprintf("%v: faultstore: %s: response lost after the write reached the store", store.ErrUnavailable, e.Op)
}

// Unwrap makes the error match store.ErrUnavailable.
func (e *LostResponseError[T]) Unwrap() error { return store.ErrUnavailable }
