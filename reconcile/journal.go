package reconcile

import (
	"time"

	"github.com/converge-go/converge/internal/mapshrink"
	"github.com/converge-go/converge/reconcile/internal/cache"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/checkpoint"
)

// journal is what a checkpoint writer (Options.Checkpoint) needs of the
// cache, kept as the cache's Observer, so under the cache's lock: which
// keys changed since the latest capture, and, for the keys changed at a
// revision not yet complete, their objects before it. A capture
// (cache.Locked) is then the cache at its complete revision, every change
// of a revision or none, however far the cache has applied a multi-key
// transaction.
//
// Invariants: before holds exactly the keys the cache applied at its
// newest revision while it is not complete (it is reset with them:
// Completed); while full is set, dirty is empty (the next capture is the
// whole cache and needs no keys).
type journal[T any] struct {
	full      bool
	dirty     map[string]struct{}
	dirtyPeak int
	before    map[string]prior[T]
	// written and seen are the Revision and Seen of the latest capture;
	// served is when the store last served (a list, a batch of the watch, a
	// probe answered).
	written int64
	seen    time.Time
	served  time.Time
	// restoredSeen is the Seen of the checkpoint the cache is about to be
	// restored from (set under the cache's lock before cache.Restore).
	restoredSeen time.Time
	// kick asks the writer to write at once (after a list that changed
	// nothing); capacity 1.
	kick chan struct{}
}

// prior is a key's object before the revision not yet complete (had
// false: the key was absent).
type prior[T any] struct {
	obj store.Object[T]
	had bool
}

var _ cache.Observer[int] = (*journal[int])(nil)

func newJournal[T any]() *journal[T] {
	return &journal[T]{full: true, dirty: map[string]struct{}{}, before: map[string]prior[T]{}, kick: make(chan struct{}, 1)}
}

// Edited notes a change of key.
func (j *journal[T]) Edited(key string) {
	if !j.full {
		j.dirty[key] = struct{}{}
	}
}

// Applying keeps key's object before the revision not yet complete, at
// the first change of key at that revision.
func (j *journal[T]) Applying(key string, old store.Object[T], had bool) {
	if _, ok := j.before[key]; !ok {
		j.before[key] = prior[T]{obj: old, had: had}
	}
}

// Completed forgets the objects kept before a revision now complete, as
// the cache forgets its keys.
func (j *journal[T]) Completed() {
	if len(j.before) > 64 {
		j.before = make(map[string]prior[T])
		return
	}
	clear(j.before)
}

// Listed notes a list installed. One that changed nothing is written at
// once; one that changed keys at the next Interval, so that its write
// (whole, for a first list) yields to the reconciles those changes wake.
func (j *journal[T]) Listed(changed bool) {
	j.served = time.Now()
	if changed {
		return
	}
	select {
	case j.kick <- struct{}{}:
	default:
	}
}

// Served notes that the store has just served.
func (j *journal[T]) Served() { j.served = time.Now() }

// Restored notes the cache restored from the checkpoint at rev: the
// checkpoint holds exactly this, nothing to write until the store serves.
func (j *journal[T]) Restored(rev int64) {
	j.full = false
	clear(j.dirty)
	j.written, j.seen = rev, j.restoredSeen
}

// restoring notes the Seen of the checkpoint the cache is about to be
// restored from.
func (j *journal[T]) restoring(in *cache.Cache[T], seen time.Time) {
	in.Locked(func(cache.View[T]) { j.restoredSeen = seen })
}

// at returns key's object at the cache's complete revision, ok false if
// it was absent then.
func (j *journal[T]) at(v cache.View[T], key string) (store.Object[T], bool) {
	if p, ok := j.before[key]; ok {
		return p.obj, p.had
	}
	return v.Get(key)
}

// capture returns the batch that brings the checkpoint to the cache at
// its complete revision, and false when there is nothing to write: no
// change since the latest capture, and either the store has not served
// since or it did less than refresh after the latest capture's Seen. It
// holds the cache's lock for the changed keys only, or, for a whole
// capture, for one pass over the cache.
func (j *journal[T]) capture(in *cache.Cache[T], refresh time.Duration) (b checkpoint.Batch[T], ok bool) {
	in.Locked(func(v cache.View[T]) { b, ok = j.captureLocked(v, refresh) })
	return b, ok
}

func (j *journal[T]) captureLocked(v cache.View[T], refresh time.Duration) (checkpoint.Batch[T], bool) {
	if !v.Filled() {
		return checkpoint.Batch[T]{}, false
	}
	rev := v.Complete()
	seen := j.seen
	if j.served.After(seen) {
		seen = j.served
	}
	if !j.full && len(j.dirty) == 0 && rev == j.written && seen.Sub(j.seen) < refresh {
		return checkpoint.Batch[T]{}, false
	}
	b := checkpoint.Batch[T]{Identity: v.Identity(), Prefix: v.Prefix(), Revision: rev, Seen: seen, Replace: j.full}
	if j.full {
		b.Put = j.whole(v)
	} else {
		mapshrink.Note(j.dirty, &j.dirtyPeak)
		for key := range j.dirty {
			if obj, ok := j.at(v, key); ok {
				b.Put = append(b.Put, obj)
			} else {
				b.Delete = append(b.Delete, key)
			}
		}
		clear(j.dirty)
		j.dirty = shrunk(j.dirty, &j.dirtyPeak)
	}
	// The keys of the revision not yet complete were captured as they were
	// before it: their changes go in the next capture.
	j.full = false
	for key := range j.before {
		j.dirty[key] = struct{}{}
	}
	j.written, j.seen = rev, seen
	return b, true
}

// whole returns every object of the cache at its complete revision.
func (j *journal[T]) whole(v cache.View[T]) []store.Object[T] {
	put := make([]store.Object[T], 0, v.Len())
	v.Keys(func(key string) {
		if obj, ok := j.at(v, key); ok {
			put = append(put, obj)
		}
	})
	for key, p := range j.before {
		if _, cached := v.Get(key); !cached && p.had {
			put = append(put, p.obj) // removed at the revision not yet complete
		}
	}
	return put
}

// captureFailed makes the next capture a whole one: the latest was not
// written, and the checkpoint may hold anything from before it.
func (j *journal[T]) captureFailed(in *cache.Cache[T]) {
	in.Locked(func(cache.View[T]) {
		j.full = true
		clear(j.dirty)
	})
}
