package reconcile

import (
	"context"
	"slices"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// Sharder lets several replicas split a controller's keys: each key belongs
// to one replica at a time, proven by guards its writes carry. Options.Shard
// takes one; reconcile/shard implements it over any store (buckets of keys
// owned by replicas, a fencing epoch per bucket). The reconciler runs
// unchanged.
//
// With a Sharder, a worker asks Claim before each reconcile: a key this
// replica does not own is not reconciled (it is dropped from the queue and
// from WaitForRevision's wait: its owner reconciles it); an owned key's
// reconcile runs with a context that ends the moment ownership is lost, and
// every write it makes through Request.Store carries the claim's guards,
// so a write made after the loss fails with store.ErrGuardFailed.
type Sharder interface {
	// Claim reports whether this replica owns key now; if it does, it
	// returns the guards that prove it and a context that ends when the
	// ownership does. It must be fast and safe for concurrent use.
	Claim(key string) (Claim, bool)
	// Subscribe calls gained each time this replica takes ownership of
	// keys, until the returned cancel is called; the controller then
	// reconciles every cached key for which owns reports true, once its
	// cache reflects the store at revision or later (the take's revision,
	// so that the new owner acts on nothing older than the handover).
	// After cancel returns, gained is not called again.
	Subscribe(gained func(owns func(key string) bool, revision int64)) (cancel func())
	// Ownerless returns the buckets of keys with no working owner now, in
	// increasing order (none when every bucket has one): Health.Ownerless.
	// It must be fast and safe for concurrent use.
	Ownerless() []int
	// RecordPrefix returns the key prefix of the Sharder's own records
	// when they live in the controller's keyspace (they must, for their
	// guards to be checked by the store), "" otherwise: New refuses a
	// controller whose Prefix covers them, since its cache would read them
	// as objects.
	RecordPrefix() string
}

// Claim is the proof of a replica's ownership of a key.
type Claim struct {
	// Guards go with every write the key's reconcile makes.
	Guards []store.Guard
	// Owned ends when the ownership does.
	Owned context.Context
}

// guardedWriter is Request.Store under a Sharder: the controller's writer
// with the claim's guards added to every write.
type guardedWriter[T any] struct {
	*writer[T]
	guards []store.Guard
}

func (g guardedWriter[T]) Create(ctx context.Context, key string, value T, guards ...store.Guard) (store.Object[T], error) {
	return g.writer.Create(ctx, key, value, append(guards, g.guards...)...)
}

func (g guardedWriter[T]) Update(ctx context.Context, key string, value T, revision int64, guards ...store.Guard) (store.Object[T], error) {
	return g.writer.Update(ctx, key, value, revision, append(guards, g.guards...)...)
}

func (g guardedWriter[T]) Delete(ctx context.Context, key string, revision int64, guards ...store.Guard) (int64, error) {
	return g.writer.Delete(ctx, key, revision, append(guards, g.guards...)...)
}

func (g guardedWriter[T]) Replace(ctx context.Context, key string, value T, revision int64, guards ...store.Guard) (store.Object[T], bool, error) {
	return g.writer.Replace(ctx, key, value, revision, append(guards, g.guards...)...)
}

func (g guardedWriter[T]) UpdateStatus(ctx context.Context, key string, value T, revision int64, guards ...store.Guard) (store.Object[T], error) {
	return g.writer.UpdateStatus(ctx, key, value, revision, append(guards, g.guards...)...)
}

// Check checks with the claim's guards added (store.Checker): a write that
// changes nothing is still refused once the key is no longer owned.
func (g guardedWriter[T]) Check(ctx context.Context, key string, revision int64, guards ...store.Guard) error {
	return g.writer.Check(ctx, key, revision, append(slices.Clip(guards), g.guards...)...)
}

func (g guardedWriter[T]) DeleteWith(ctx context.Context, key string, revision int64, p apistore.Propagation, guards ...store.Guard) (int64, bool, error) {
	return g.writer.DeleteWith(ctx, key, revision, p, append(guards, g.guards...)...)
}
