package reconcile

import (
	"context"

	"github.com/converge-go/converge/internal/mapshrink"
	"github.com/converge-go/converge/store"
)

// The informer's cache: reads and writes of its objects, tombstones and
// published revision, each under the informer's lock.

// revisionChanged returns the published revision and a channel closed
// when it grows (or a new epoch begins).
func (in *informer[T]) revisionChanged() (int64, <-chan struct{}) {
	p, advanced := in.progressNow()
	return p.published, advanced
}

// published is how far the cache has reported its store: the revision, in
// the epoch (see storeIdentity) that began at epochRev.
type published struct {
	published, epochRev int64
	epoch               uint64
}

// progressNow returns how far the cache has reported its store, and a
// channel closed when that changes.
func (in *informer[T]) progressNow() (published, <-chan struct{}) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.advanced == nil {
		in.advanced = make(chan struct{})
	}
	return published{published: in.published, epochRev: in.ident.epochRev, epoch: in.ident.epoch}, in.advanced
}

// waitRevision blocks until the cache reflects the store at rev or later,
// or ctx ends (its error). It asks the watch to prove its progress, since
// rev may have been written outside the cache's view.
func (in *informer[T]) waitRevision(ctx context.Context, rev int64) error {
	for {
		cur, advanced := in.revisionChanged()
		if cur >= rev {
			return nil
		}
		in.askProgress()
		select {
		case <-advanced:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// put caches obj, whose key held old if had (the caller has looked it up).
func (in *informer[T]) put(obj, old store.Object[T], had bool) {
	in.edits.Add(1)
	if had {
		for _, ix := range in.indexes {
			ix.remove(old)
		}
	}
	in.objects[obj.Key] = obj
	for _, ix := range in.indexes {
		ix.add(obj)
	}
	if in.tombstones != nil {
		delete(in.tombstones, obj.Key)
	}
	if in.journal != nil {
		in.journal.touch(obj.Key)
	}
}

// remove drops a cached object; last is its last value at the revision of
// the removal, kept as a tombstone if the informer keeps them.
func (in *informer[T]) remove(last store.Object[T]) {
	in.edits.Add(1)
	if old, ok := in.objects[last.Key]; ok {
		for _, ix := range in.indexes {
			ix.remove(old)
		}
	}
	delete(in.objects, last.Key)
	if in.tombstones != nil {
		in.tombstones[last.Key] = last
	}
	if in.journal != nil {
		in.journal.touch(last.Key)
	}
}

// keepTombstones makes the informer keep the last value of every key it
// removes until forgetTombstone. Call before run.
func (in *informer[T]) keepTombstones() {
	in.tombstones = make(map[string]store.Object[T])
}

// lookup returns the cached object for key, or, if the key was removed,
// its tombstone with deleted set: under one lock, so that a key is never
// seen as neither present nor deleted while its removal is applied.
func (in *informer[T]) lookup(key string) (obj store.Object[T], present, deleted bool) {
	obj, present, deleted, _ = in.lookupCounted(key)
	return obj, present, deleted
}

// lookupCounted is lookup, and also returns the count of the cache's
// edits it read under the same lock: while edited() still returns it, the
// cache holds what lookupCounted returned.
func (in *informer[T]) lookupCounted(key string) (obj store.Object[T], present, deleted bool, edits uint64) {
	in.mu.RLock()
	defer in.mu.RUnlock()
	edits = in.edits.Load()
	if obj, ok := in.objects[key]; ok {
		return obj, true, false, edits
	}
	obj, deleted = in.tombstones[key]
	return obj, false, deleted, edits
}

// edited returns the count of the changes made to the cache's objects and
// tombstones so far, without the lock.
func (in *informer[T]) edited() uint64 { return in.edits.Load() }

// eachKey calls fn for every cached key, under the read lock (fn must not
// call back into the informer).
func (in *informer[T]) eachKey(fn func(key string)) {
	in.mu.RLock()
	defer in.mu.RUnlock()
	for key := range in.objects {
		fn(key)
	}
}

// forgetTombstone drops key's tombstone if it is the one of the removal at
// rev (a newer removal keeps its own).
func (in *informer[T]) forgetTombstone(key string, rev int64) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if t, ok := in.tombstones[key]; ok && t.Revision <= rev {
		in.edits.Add(1)
		forgetKey(&in.tombstones, &in.tombstonesPeak, key)
	}
}

// shrinkLocked notes the sizes of the cache's maps at the end of a batch
// and rebuilds a map that has fallen to an eighth of its peak, since Go
// maps never give memory back: once most of a million objects are
// deleted, the cache returns their slots to the heap. in.mu is held.
func (in *informer[T]) shrinkLocked() {
	mapshrink.Note(in.objects, &in.objectsPeak)
	in.objects = shrunk(in.objects, &in.objectsPeak)
	if in.tombstones != nil {
		mapshrink.Note(in.tombstones, &in.tombstonesPeak)
		in.tombstones = shrunk(in.tombstones, &in.tombstonesPeak)
	}
}

// tombstoneCount is the number of tombstones kept (for tests).
func (in *informer[T]) tombstoneCount() int {
	in.mu.RLock()
	defer in.mu.RUnlock()
	return len(in.tombstones)
}

// askProgress asks the running watch to prove how far it has delivered, so
// that a revision written outside the cache's view is known reflected.
func (in *informer[T]) askProgress() {
	select {
	case in.wantProgress <- struct{}{}:
	default:
	}
}

func (in *informer[T]) isSynced() bool {
	select {
	case <-in.synced:
		return true
	default:
		return false
	}
}

// markSynced closes synced, once: the store's state is in the cache.
func (in *informer[T]) markSynced() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.isSynced() {
		close(in.synced)
	}
}

// isFilled reports whether a list or a checkpoint is in the cache.
func (in *informer[T]) isFilled() bool {
	select {
	case <-in.filled:
		return true
	default:
		return false
	}
}

// freshListed closes the channel relist returned, if any.
func (in *informer[T]) freshListed() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.fresh != nil {
		close(in.fresh)
		in.fresh = nil
	}
}

func (in *informer[T]) setDown(err error) {
	in.mu.Lock()
	in.down = err
	in.mu.Unlock()
}

// health reports why the cache is not following the store, or nil.
func (in *informer[T]) health() error {
	in.mu.RLock()
	defer in.mu.RUnlock()
	return in.down
}

func (in *informer[T]) get(key string) (store.Object[T], bool) {
	in.mu.RLock()
	defer in.mu.RUnlock()
	obj, ok := in.objects[key]
	return obj, ok
}

// currentRevision returns the revision whose changes have all been
// reported.
func (in *informer[T]) currentRevision() int64 {
	in.mu.RLock()
	defer in.mu.RUnlock()
	return in.published
}
