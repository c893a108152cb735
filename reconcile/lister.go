package reconcile

import (
	"github.com/converge-go/converge/reconcile/internal/cache"
	"github.com/converge-go/converge/store"
)

// Lister reads a controller's cache: the latest objects seen in the store,
// without a store round trip. Objects are shared with the cache and, for the
// in-memory store, with the store: do not mutate them.
type Lister[T any] struct {
	c *cache.Cache[T]
}

// Get returns the cached object at key.
func (l Lister[T]) Get(key string) (store.Object[T], bool) { return l.c.Get(key) }

// List returns every cached object, sorted by key.
func (l Lister[T]) List() []store.Object[T] { return l.c.List() }

// ByIndex returns the cached objects whose index name has value, sorted by
// key. An unknown index yields nothing.
func (l Lister[T]) ByIndex(name, value string) []store.Object[T] { return l.c.ByIndex(name, value) }
