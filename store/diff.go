package store

import (
	"context"
	"fmt"
)

// Differ is implemented by a store that can tell what changed after a
// revision from the revision each key carries, without replaying the
// history in between: how a watcher that fell behind catches up without
// a re-list (WatchCatchingUp). The in-memory store and store/boltstore
// implement it, and View passes it through.
type Differ[T any] interface {
	// Diff returns the net change under prefix from revision after to
	// the store's revision now, rev, read as one snapshot: for each key
	// whose state at rev differs from its state at after, one event, in
	// the order of the revisions they carry. A key that exists at rev is
	// Created (its CreateRevision is after after) or Updated, with its
	// object at rev; a key that existed at after and not at rev is
	// Deleted, with its last value and the revision of its delete. A key
	// created and deleted within the span is reported as Deleted or not
	// at all. A key changed several times appears once: the states in
	// between are not reported.
	//
	// An after at or beyond rev returns no events. An after older than
	// what the store still knows of deletions fails with ErrCompacted;
	// a negative one, a bad prefix or a nil ctx with ErrInvalid.
	Diff(ctx context.Context, prefix string, after int64) (changes []Event[T], rev int64, err error)
}

// DefaultTombstones is how many deleted keys a Memory store remembers
// for Diff (WithTombstones).
const DefaultTombstones = DefaultHistory

// WithTombstones sets how many deleted keys, the most recently deleted,
// the store remembers with their last value so that Diff can report them
// (default DefaultTombstones). A Diff after a revision older than the
// oldest delete forgotten fails with ErrCompacted. Zero selects the
// default; a negative value makes every operation of the store fail with
// ErrInvalid.
func WithTombstones(keys int) MemoryOption {
	return func(c *memoryConfig) {
		switch {
		case keys < 0:
			c.refuse("WithTombstones(%d)", keys)
		case keys > 0:
			c.tombstones = keys
		}
	}
}

// tombstones are the deleted keys a Memory store remembers, each with its
// last object at the revision of its delete, oldest delete first in
// order. A key created again leaves the map; its entry in order stays
// until it is the oldest and is then skipped. floor is the revision of the
// latest delete forgotten: a Diff after a revision below it cannot tell
// every delete since.
type tombstones[T any] struct {
	byKey map[string]Object[T]
	order []Object[T] // a queue: order[head:] are live entries
	head  int
	floor int64
}

// deleted remembers the delete of obj (at obj.Revision), forgetting the
// oldest delete beyond limit.
func (ts *tombstones[T]) deleted(obj Object[T], limit int) {
	if ts.byKey == nil {
		ts.byKey = make(map[string]Object[T])
	}
	ts.byKey[obj.Key] = obj
	ts.order = append(ts.order, obj)
	for len(ts.order)-ts.head > limit {
		old := ts.order[ts.head]
		ts.order[ts.head] = Object[T]{}
		ts.head++
		if cur, ok := ts.byKey[old.Key]; ok && cur.Revision == old.Revision {
			delete(ts.byKey, old.Key)
		}
		ts.floor = old.Revision
	}
	if ts.head > len(ts.order)/2 { // reuse the front of the queue
		n := copy(ts.order, ts.order[ts.head:])
		clear(ts.order[n:])
		ts.order, ts.head = ts.order[:n], 0
	}
}

// created forgets the tombstone of a key created again.
func (ts *tombstones[T]) created(key string) { delete(ts.byKey, key) }

// compact forgets every delete at or below rev.
func (ts *tombstones[T]) compact(rev int64) {
	for ts.head < len(ts.order) && ts.order[ts.head].Revision <= rev {
		old := ts.order[ts.head]
		ts.order[ts.head] = Object[T]{}
		ts.head++
		if cur, ok := ts.byKey[old.Key]; ok && cur.Revision == old.Revision {
			delete(ts.byKey, old.Key)
		}
	}
	ts.floor = max(ts.floor, rev)
}

var _ Differ[int] = (*Memory[int])(nil)

// Diff returns the net change under prefix after revision after (Differ),
// read under the store's lock: the store's keys in the order of their
// latest write (writeOrder), kept from the first Diff of a store of
// 65,536 keys or more, are read from the first written after after, so
// a Diff costs time in the number of keys changed since, not of keys
// held (a smaller store's keys are all looked at). It fails with ErrCompacted when
// after is older than the latest delete forgotten (WithTombstones) or
// compacted (Compact).
func (m *Memory[T]) Diff(ctx context.Context, prefix string, after int64) ([]Event[T], int64, error) {
	changes, _, rev, err := m.diffPage(ctx, prefix, after, after, true, nil)
	return changes, rev, err
}

var _ Differ[int] = (*View[int])(nil)

// Diff is the byte store's Diff, its values decoded (Differ). Over a byte
// store that is no Differ it cannot tell what changed, and fails with
// ErrCompacted, as a watch that fell behind would end.
func (v *View[T]) Diff(ctx context.Context, prefix string, after int64) ([]Event[T], int64, error) {
	if err := v.check(ctx); err != nil {
		return nil, 0, err
	}
	d, ok := v.raw.(Differ[[]byte])
	if !ok {
		if err := ValidatePrefix(prefix); err != nil {
			return nil, 0, err
		}
		if err := ValidateRevision(after); err != nil {
			return nil, 0, err
		}
		return nil, 0, fmt.Errorf("%w: the byte store %T cannot tell what changed after revision %d", ErrCompacted, v.raw, after)
	}
	raw, rev, err := d.Diff(ctx, prefix, after)
	if err != nil {
		return nil, 0, err
	}
	out := make([]Event[T], len(raw))
	for i, ev := range raw {
		obj, err := v.decode(ev.Object)
		if err != nil {
			return nil, 0, err
		}
		out[i] = Event[T]{Type: ev.Type, Object: obj}
	}
	return out, rev, nil
}
