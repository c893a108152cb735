package cache

import (
	"slices"
	"strings"

	"github.com/converge-go/converge/internal/mapshrink"
	"github.com/converge-go/converge/store"
)

// The cache's objects and tombstones: reads and writes, each under the
// cache's lock. Values are shared with the cache and, for the in-memory
// store, with the store: readers must not mutate them. Each read returns
// its own store.Object (a copy of the key, value and revisions), so that
// a reader that changes the Object it got changes nothing else.

// entry is a cached object without its key, which is the key of the
// cache's map: a key's string header is held once, not twice (16 of the
// 56 bytes a map slot of a pointer-valued object took).
type entry[T any] struct {
	value     T
	rev       int64 // store.Object.Revision
	createRev int64 // store.Object.CreateRevision
}

func entryOf[T any](obj store.Object[T]) entry[T] {
	return entry[T]{value: obj.Value, rev: obj.Revision, createRev: obj.CreateRevision}
}

// object returns e as the object at key.
func (e entry[T]) object(key string) store.Object[T] {
	return store.Object[T]{Key: key, Value: e.value, Revision: e.rev, CreateRevision: e.createRev}
}

// object returns the cached object at key. c.mu is held.
func (c *Cache[T]) object(key string) (store.Object[T], bool) {
	e, ok := c.objects[key]
	if !ok {
		return store.Object[T]{}, false
	}
	return e.object(key), true
}

// put caches obj, whose key held old if had (the caller has looked it up).
func (c *Cache[T]) put(obj, old store.Object[T], had bool) {
	c.edits.Add(1)
	if had {
		for _, ix := range c.indexes {
			ix.remove(old)
		}
	}
	c.objects[obj.Key] = entryOf(obj)
	for _, ix := range c.indexes {
		ix.add(obj)
	}
	if c.tombstones != nil {
		delete(c.tombstones, obj.Key)
	}
	c.obs.Edited(obj.Key)
}

// remove drops a cached object; last is its last value at the revision of
// the removal, kept as a tombstone if the cache keeps them.
func (c *Cache[T]) remove(last store.Object[T]) {
	c.edits.Add(1)
	if old, ok := c.object(last.Key); ok {
		for _, ix := range c.indexes {
			ix.remove(old)
		}
	}
	delete(c.objects, last.Key)
	if c.tombstones != nil {
		c.tombstones[last.Key] = last
	}
	c.obs.Edited(last.Key)
}

// Get returns the cached object at key.
func (c *Cache[T]) Get(key string) (store.Object[T], bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.object(key)
}

// List returns every cached object, sorted by key.
func (c *Cache[T]) List() []store.Object[T] {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]store.Object[T], 0, len(c.objects))
	for key, e := range c.objects {
		out = append(out, e.object(key))
	}
	sortObjects(out)
	return out
}

// ByIndex returns the cached objects whose index name has value, sorted by
// key. An unknown index yields nothing.
func (c *Cache[T]) ByIndex(name, value string) []store.Object[T] {
	c.mu.RLock()
	defer c.mu.RUnlock()
	ix, ok := c.indexes[name]
	if !ok {
		return nil
	}
	var keys map[string]struct{}
	if set := ix.keys[value]; set != nil {
		keys = set.keys
	}
	out := make([]store.Object[T], 0, len(keys))
	for key := range keys {
		out = append(out, c.objects[key].object(key))
	}
	sortObjects(out)
	return out
}

func sortObjects[T any](objs []store.Object[T]) {
	slices.SortFunc(objs, func(a, b store.Object[T]) int { return strings.Compare(a.Key, b.Key) })
}

// Lookup returns the cached object for key, or, if the key was removed,
// its tombstone with deleted set: under one lock, so that a key is never
// seen as neither present nor deleted while its removal is applied.
func (c *Cache[T]) Lookup(key string) (obj store.Object[T], present, deleted bool) {
	obj, present, deleted, _ = c.LookupCounted(key)
	return obj, present, deleted
}

// LookupCounted is Lookup, and also returns the count of the cache's
// edits it read under the same lock: while Edits still returns it, the
// cache holds what LookupCounted returned.
func (c *Cache[T]) LookupCounted(key string) (obj store.Object[T], present, deleted bool, edits uint64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	edits = c.edits.Load()
	if obj, ok := c.object(key); ok {
		return obj, true, false, edits
	}
	obj, deleted = c.tombstones[key]
	return obj, false, deleted, edits
}

// Edits returns the count of the changes made to the cache's objects and
// tombstones so far, without the lock.
func (c *Cache[T]) Edits() uint64 { return c.edits.Load() }

// EachKey calls fn for every cached key, under the read lock (fn must not
// call back into the cache).
func (c *Cache[T]) EachKey(fn func(key string)) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for key := range c.objects {
		fn(key)
	}
}

// ForgetTombstone drops key's tombstone if it is the one of the removal at
// rev (a newer removal keeps its own).
func (c *Cache[T]) ForgetTombstone(key string, rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.tombstones[key]; ok && t.Revision <= rev {
		c.edits.Add(1)
		delete(c.tombstones, key)
		c.tombstones = mapshrink.Shrunk(c.tombstones, &c.tombstonesPeak, mapshrink.Floor)
	}
}

// TombstoneCount returns the number of tombstones kept.
func (c *Cache[T]) TombstoneCount() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.tombstones)
}

// shrinkLocked notes the sizes of the cache's maps at the end of a batch
// and rebuilds a map that has fallen to an eighth of its peak, since Go
// maps never give memory back: once most of a million objects are
// deleted, the cache returns their slots to the heap. c.mu is held.
func (c *Cache[T]) shrinkLocked() {
	mapshrink.Note(c.objects, &c.objectsPeak)
	c.objects = mapshrink.Shrunk(c.objects, &c.objectsPeak, mapshrink.Floor)
	if c.tombstones != nil {
		mapshrink.Note(c.tombstones, &c.tombstonesPeak)
		c.tombstones = mapshrink.Shrunk(c.tombstones, &c.tombstonesPeak, mapshrink.Floor)
	}
}
