package lock

import (
	"context"

	"github.com/converge-go/converge/store"
)

// Locker is a lock shared by several processes, one of which holds it at a
// time: the basis of leader election. Lease implements it over any Store;
// other backends (etcd's elections) may implement it natively.
type Locker interface {
	// Acquire blocks until this process holds the lock, or returns ctx's
	// error once ctx ends. The returned Lock outlives ctx: it lasts until it
	// is released or lost.
	Acquire(ctx context.Context) (Lock, error)
}

// Lock is one term of holding a Locker.
type Lock interface {
	// Context is cancelled the moment the holder can no longer be sure it
	// holds the lock, and when it is released. Its cause (context.Cause)
	// matches ErrLost or ErrReleased. Work done on behalf of the lock runs
	// under this context.
	Context() context.Context
	// Token is the fencing token of this term: it is unique to the term and
	// larger than the tokens of every earlier term.
	Token() int64
	// Guard is a store precondition that holds only while this term is the
	// current one. Writes made on behalf of the lock carry it, so that a
	// deposed holder's late writes fail with store.ErrGuardFailed.
	Guard() store.Guard
	// Release gives the lock up so that another process can take it at
	// once; it cancels Context first. It is safe to call more than once.
	Release(ctx context.Context) error
}
