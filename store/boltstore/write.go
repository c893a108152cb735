package boltstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/converge-go/converge/store"
	bolt "go.etcd.io/bbolt"
)

// Create stores value at key if the key does not exist, else returns an
// error matching store.ErrExists. The write is on disk when Create returns.
func (s *Store[T]) Create(ctx context.Context, key string, value T, guards ...store.Guard) (store.Object[T], error) {
	res, err := s.write(ctx, writeOp{kind: store.Created, key: key, guards: guards}, &value)
	if err != nil {
		return store.Object[T]{}, err
	}
	return store.Object[T]{Key: key, Value: value, Revision: res.rev, CreateRevision: res.createRev}, nil
}

// Update replaces the value at key if its revision is still revision, else
// returns an error matching store.ErrConflict (store.ErrNotFound if the key
// does not exist). The write is on disk when Update returns.
func (s *Store[T]) Update(ctx context.Context, key string, value T, revision int64, guards ...store.Guard) (store.Object[T], error) {
	res, err := s.write(ctx, writeOp{kind: store.Updated, key: key, expect: revision, guards: guards}, &value)
	if err != nil {
		return store.Object[T]{}, err
	}
	return store.Object[T]{Key: key, Value: value, Revision: res.rev, CreateRevision: res.createRev}, nil
}

// Delete removes key if its revision is still revision, else returns an
// error matching store.ErrConflict (store.ErrNotFound if the key does not
// exist). It returns the revision of the delete, which is on disk when Delete
// returns.
func (s *Store[T]) Delete(ctx context.Context, key string, revision int64, guards ...store.Guard) (int64, error) {
	res, err := s.write(ctx, writeOp{kind: store.Deleted, key: key, expect: revision, guards: guards}, nil)
	if err != nil {
		return 0, err
	}
	return res.rev, nil
}

// writeOp is one write, validated and encoded, ready for a transaction.
type writeOp struct {
	kind   store.EventType
	key    string
	value  []byte // encoded; nil for a delete
	expect int64  // the expected revision of an update or delete
	guards []store.Guard
	cause  string // store.CauseFrom of the write's context
}

// writeResult is the outcome of a writeOp in a transaction.
type writeResult struct {
	// failed is the condition that did not hold (ErrExists, ErrConflict,
	// ErrNotFound, ErrGuardFailed); nothing was written.
	failed         error
	rev, createRev int64
}

// write validates and encodes op (value is nil for a delete) and commits it.
func (s *Store[T]) write(ctx context.Context, op writeOp, value *T) (writeResult, error) {
	exit, err := s.enter(ctx)
	if err != nil {
		return writeResult{}, err
	}
	defer exit()
	if err := store.ValidateKey(op.key); err != nil {
		return writeResult{}, err
	}
	if err := store.ValidateGuards(op.guards); err != nil {
		return writeResult{}, err
	}
	if err := store.ValidateRevision(op.expect); err != nil {
		return writeResult{}, err
	}
	if value != nil {
		if op.value, err = s.encode(op.key, *value); err != nil {
			return writeResult{}, err
		}
	}
	op.cause = store.CauseFrom(ctx)
	res, err := s.commit(op)
	if err != nil {
		return writeResult{}, err
	}
	return res, res.failed
}

// encode validates and encodes a value, refusing one whose encoding exceeds
// the maximum size.
func (s *Store[T]) encode(key string, value T) ([]byte, error) {
	if err := store.ValidateValue(value); err != nil {
		return nil, err
	}
	b, err := s.codec.Marshal(value)
	switch {
	case errors.Is(err, store.ErrInvalid):
		return nil, fmt.Errorf("value of %q: %w", key, err)
	case err != nil:
		return nil, fmt.Errorf("%w: encode value of %q: %w", store.ErrInvalid, key, err)
	case len(b) > s.cfg.maxValueSize:
		return nil, fmt.Errorf("%w: value of %q encodes to %d bytes, more than the maximum of %d",
			store.ErrInvalid, key, len(b), s.cfg.maxValueSize)
	}
	return b, nil
}

// commit applies op in a bbolt transaction, shared with concurrent writes
// when there are any (see committer).
//
// The function may run several times, in transactions that are rolled
// back, and a shared transaction fails whole if the function returns an
// error. So a condition that does not hold is not an error of the function:
// apply records it in the result, which each run overwrites, and the
// function returns nil so that the other writes of the transaction commit.
// Only the run whose transaction commits matters: its result is the one
// seen afterwards, and its commit handler, which bbolt calls only for
// committed transactions, hands the event to the watchers.
func (s *Store[T]) commit(op writeOp) (writeResult, error) {
	var res writeResult
	fn := func(tx *bolt.Tx) error {
		r, ev, err := apply(tx, op, s.cfg.history)
		res = r
		if err != nil || r.failed != nil {
			return err
		}
		ev.cause = op.cause
		tx.OnCommit(func() { s.hub.committed(ev) })
		return nil
	}
	if err := s.committer.run(fn); err != nil {
		return writeResult{}, dbError(err)
	}
	return res, nil
}

// apply performs op in tx: checks its guards and its condition, then writes
// the object, the history record and the revision counter, and trims the
// history to keep revisions. A condition that does not hold is returned in
// the result with nothing written; the error is for a damaged file or a
// failed bbolt call.
func apply(tx *bolt.Tx, op writeOp, keep int) (writeResult, rawEvent, error) {
	var ev rawEvent
	b, err := openBuckets(tx)
	if err != nil {
		return writeResult{}, ev, err
	}
	rev, err := readCounter(b.meta, revisionKey)
	if err != nil {
		return writeResult{}, ev, err
	}
	compacted, err := readCounter(b.meta, compactedKey)
	if err != nil {
		return writeResult{}, ev, err
	}
	if failed, err := checkGuards(b.objects, op.guards); err != nil || failed != nil {
		return writeResult{failed: failed}, ev, err
	}
	ev = rawEvent{typ: op.kind, key: op.key, value: op.value, rev: rev + 1}
	key := []byte(op.key)
	cur := b.objects.Get(key)
	if op.kind == store.Created {
		if cur != nil {
			return writeResult{failed: fmt.Errorf("%w: %q", store.ErrExists, op.key)}, ev, nil
		}
		ev.createRev = ev.rev
	} else {
		if cur == nil {
			return writeResult{failed: fmt.Errorf("%w: %q", store.ErrNotFound, op.key)}, ev, nil
		}
		createRev, curRev, curValue, err := decodeObject(op.key, cur)
		if err != nil {
			return writeResult{}, ev, err
		}
		if curRev != op.expect {
			return writeResult{failed: fmt.Errorf("%w: %q is at revision %d, not %d",
				store.ErrConflict, op.key, curRev, op.expect)}, ev, nil
		}
		ev.createRev = createRev
		if op.kind == store.Deleted {
			ev.value = bytes.Clone(curValue)
		}
	}
	count, err := readCounter(b.meta, objectsKey)
	if err != nil {
		return writeResult{}, ev, err
	}
	switch op.kind {
	case store.Created:
		err = putCounter(b.meta, objectsKey, count+1)
	case store.Deleted:
		err = putCounter(b.meta, objectsKey, count-1)
	}
	if err != nil {
		return writeResult{}, ev, err
	}
	if op.kind == store.Deleted {
		err = b.objects.Delete(key)
	} else {
		err = b.objects.Put(key, encodeObject(op.key, ev.createRev, ev.rev, ev.value))
	}
	if err == nil {
		err = b.history.Put(revKey(ev.rev), encodeHistory(ev))
	}
	if err == nil {
		err = putCounter(b.meta, revisionKey, ev.rev)
	}
	if err == nil {
		err = prune(b, compacted, ev.rev-int64(keep))
	}
	if err != nil {
		return writeResult{}, ev, err
	}
	return writeResult{rev: ev.rev, createRev: ev.createRev}, ev, nil
}

// checkGuards returns the first guard that does not hold, as an error
// matching store.ErrGuardFailed.
func checkGuards(objects *bolt.Bucket, guards []store.Guard) (failed, err error) {
	for _, g := range guards {
		var have int64
		if rec := objects.Get([]byte(g.Key)); rec != nil {
			createRev, rev, _, err := decodeObject(g.Key, rec)
			if err != nil {
				return nil, err
			}
			have = rev
			if g.Created {
				have = createRev
			}
		}
		if have != g.Revision {
			what := "revision"
			if g.Created {
				what = "create revision"
			}
			return fmt.Errorf("%w: %q has %s %d, guard expects %d", store.ErrGuardFailed, g.Key, what, have, g.Revision), nil
		}
	}
	return nil, nil
}

// prune drops the history records after compacted up to and including
// through, and records through as the compacted revision.
func prune(b txBuckets, compacted, through int64) error {
	if through <= compacted {
		return nil
	}
	for r := compacted + 1; r <= through; r++ {
		if err := b.history.Delete(revKey(r)); err != nil {
			return err
		}
	}
	return putCounter(b.meta, compactedKey, through)
}
