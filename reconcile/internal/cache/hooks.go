package cache

import "github.com/converge-go/converge/store"

// Hooks are told what changed in the cache, from the goroutine of Run and
// without the cache's lock held (Replaced excepted: see there). Each may
// be nil.
type Hooks[T any] struct {
	// Changed is called with the changes applied to the cache, in store
	// order, batch by batch (a list in chunks of ReportChunk). The slice
	// is reused once Changed returns.
	Changed func(changes []Change[T])
	// Listing is told the number of changes a large list is about to
	// report (in chunks of ReportChunk), so that their consumer can make
	// room for them at once.
	Listing func(n int)
	// Replaced is called with the function that installs the list of
	// another history (a store of another identity, or rolled back:
	// history.go) and why, and must call it: the caller rebases what it
	// keeps of the old history under its own lock, around install.
	Replaced func(install func(), why store.HistoryReason)
}

// Observer is told of each edit of the cache with the cache's lock held,
// so that what it keeps moves in step with the objects: Locked then reads
// both at one point. Its methods must be fast and must not call back into
// the cache. Which revision an edit is of is for the caller of Locked to
// read (View.Complete).
type Observer[T any] interface {
	// Edited: key's object was put or removed (by a list, a watch event
	// or a restored state).
	Edited(key string)
	// Applying: a watch event is about to change key, whose object is
	// old (had false: absent), at the newest revision, which may have more
	// keys to come. Completed follows once it is complete.
	Applying(key string, old store.Object[T], had bool)
	// Completed: every change of the newest revision is applied; the keys
	// given to Applying since the last Completed are settled.
	Completed()
	// Listed: a list of the store is installed; changed reports whether it
	// changed anything. The store has just served.
	Listed(changed bool)
	// Served: the store has just served (a batch of its watch, a probe
	// answered).
	Served()
	// Restored: a saved state was installed (Cache.Restore) at rev.
	Restored(rev int64)
}

// noObserver observes nothing.
type noObserver[T any] struct{}

func (noObserver[T]) Edited(string)                          {}
func (noObserver[T]) Applying(string, store.Object[T], bool) {}
func (noObserver[T]) Completed()                             {}
func (noObserver[T]) Listed(bool)                            {}
func (noObserver[T]) Served()                                {}
func (noObserver[T]) Restored(int64)                         {}

// View is the cache as Locked shows it, at one point of its edits.
type View[T any] struct{ c *Cache[T] }

// Get returns key's object.
func (v View[T]) Get(key string) (store.Object[T], bool) {
	return v.c.object(key)
}

// Len returns the number of objects.
func (v View[T]) Len() int { return len(v.c.objects) }

// Keys calls fn for every key.
func (v View[T]) Keys(fn func(key string)) {
	for key := range v.c.objects {
		fn(key)
	}
}

// Complete returns the newest revision whose every change is applied.
func (v View[T]) Complete() int64 { return v.c.complete }

// Identity returns the identity of the store the cache reflects ("" if
// unknown, or it has none).
func (v View[T]) Identity() string { return v.c.ident.id }

// Prefix returns the cache's prefix.
func (v View[T]) Prefix() string { return v.c.prefix }

// Filled reports whether a list or a restored state is in the cache.
func (v View[T]) Filled() bool { return v.c.isFilled() }

// Locked calls fn with the cache's lock held (exclusively), so that fn
// sees the objects and what its Observer kept at one point. fn must not
// call back into the cache nor keep v.
func (c *Cache[T]) Locked(fn func(v View[T])) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fn(View[T]{c})
}
