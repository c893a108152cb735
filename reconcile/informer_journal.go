package reconcile

import (
	"time"

	"github.com/converge-go/converge/internal/mapshrink"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/checkpoint"
)

// journal is what the informer keeps for a checkpoint writer
// (Options.Checkpoint), under the informer's lock: which keys changed since
// the latest capture, and, for the keys changed at a revision not yet
// complete (informer.revKeys), their objects before it. A capture is then
// the cache at complete, every change of a revision or none, however far
// the cache has applied a multi-key transaction.
//
// Invariants: before holds exactly the keys of revKeys (it is reset with
// them); while full is set, dirty is empty (the next capture is the whole
// cache and needs no keys).
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

func newJournal[T any]() *journal[T] {
	return &journal[T]{full: true, dirty: map[string]struct{}{}, before: map[string]prior[T]{}, kick: make(chan struct{}, 1)}
}

// touch notes a change of key.
func (j *journal[T]) touch(key string) {
	if !j.full {
		j.dirty[key] = struct{}{}
	}
}

// noteBefore keeps key's object before the revision not yet complete, at
// the first change of key at that revision.
func (j *journal[T]) noteBefore(key string, old store.Object[T], had bool) {
	if _, ok := j.before[key]; !ok {
		j.before[key] = prior[T]{obj: old, had: had}
	}
}

// revisionComplete forgets the objects kept before a revision now
// complete, as resetRevKeys forgets its keys.
func (j *journal[T]) revisionComplete() {
	if len(j.before) > 64 {
		j.before = make(map[string]prior[T])
		return
	}
	clear(j.before)
}

// listed notes a list installed. One that changed nothing is written at
// once; one that changed keys at the next Interval, so that its write
// (whole, for a first list) yields to the reconciles those changes wake.
func (j *journal[T]) listed(now time.Time, changed bool) {
	j.served = now
	if changed {
		return
	}
	select {
	case j.kick <- struct{}{}:
	default:
	}
}

// at returns key's object at complete, ok false if it was absent then.
// in.mu is held.
func (in *informer[T]) at(key string) (store.Object[T], bool) {
	if p, ok := in.journal.before[key]; ok {
		return p.obj, p.had
	}
	obj, ok := in.objects[key]
	return obj, ok
}

// capture returns the batch that brings the checkpoint to the cache at
// complete, and false when there is nothing to write: no change since the
// latest capture, and either the store has not served since or it did
// less than refresh after the latest capture's Seen. It holds the lock
// for the changed keys only, or, for a whole capture, for one pass over
// the cache.
func (in *informer[T]) capture(refresh time.Duration) (checkpoint.Batch[T], bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	j := in.journal
	if !in.isFilled() {
		return checkpoint.Batch[T]{}, false
	}
	rev := in.complete
	seen := j.seen
	if j.served.After(seen) {
		seen = j.served
	}
	if !j.full && len(j.dirty) == 0 && rev == j.written && seen.Sub(j.seen) < refresh {
		return checkpoint.Batch[T]{}, false
	}
	b := checkpoint.Batch[T]{Identity: in.ident.id, Prefix: in.prefix, Revision: rev, Seen: seen, Replace: j.full}
	if j.full {
		b.Put = make([]store.Object[T], 0, len(in.objects))
		for key := range in.objects {
			if obj, ok := in.at(key); ok {
				b.Put = append(b.Put, obj)
			}
		}
		for key, p := range j.before {
			if _, cached := in.objects[key]; !cached && p.had {
				b.Put = append(b.Put, p.obj) // removed at the revision not yet complete
			}
		}
	} else {
		mapshrink.Note(j.dirty, &j.dirtyPeak)
		for key := range j.dirty {
			if obj, ok := in.at(key); ok {
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

// captureFailed makes the next capture a whole one: the latest was not
// written, and the checkpoint may hold anything from before it.
func (in *informer[T]) captureFailed() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.journal.full = true
	clear(in.journal.dirty)
}

// served notes that the store has just served (a probe answered).
func (in *informer[T]) served() {
	if in.journal == nil {
		return
	}
	in.mu.Lock()
	in.journal.served = time.Now()
	in.mu.Unlock()
}
