package boltstore

import (
	"context"
	"fmt"

	"github.com/converge-go/converge/store"
	bolt "go.etcd.io/bbolt"
)

var _ store.BatchWriter[int] = (*Store[int])(nil)

// WriteBatch commits writes in one bbolt transaction, synced once
// (store.BatchWriter): each write whose revision and guards hold takes the
// next revision, in the batch's order, with no other write in between; a
// refused write is reported on its result and the others land. Bad input,
// a value the codec refuses or one over the maximum size included, refuses
// the whole batch with store.ErrInvalid before anything is written. The
// writes are on disk when WriteBatch returns.
func (s *Store[T]) WriteBatch(ctx context.Context, writes []store.Write[T]) ([]store.WriteResult[T], error) {
	exit, err := s.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer exit()
	if err := store.ValidateBatch(writes); err != nil {
		return nil, err
	}
	ops := make([]writeOp, len(writes))
	for i, w := range writes {
		ops[i] = writeOp{kind: store.Updated, key: w.Key, expect: w.Revision, guards: w.Guards}
		switch {
		case w.Delete:
			ops[i].kind = store.Deleted
			continue
		case w.Revision == 0:
			ops[i].kind = store.Created
		}
		if ops[i].value, err = s.encode(w.Key, w.Value); err != nil {
			return nil, fmt.Errorf("batch write %d: %w", i, err)
		}
	}
	res, err := s.commitBatch(ops)
	if err != nil {
		return nil, err
	}
	out := make([]store.WriteResult[T], len(writes))
	for i, r := range res {
		switch {
		case r.failed != nil:
			out[i].Err = r.failed
		case writes[i].Delete:
			out[i].Object = store.Object[T]{Key: writes[i].Key, Revision: r.rev}
		default:
			out[i].Object = store.Object[T]{Key: writes[i].Key, Value: writes[i].Value, Revision: r.rev, CreateRevision: r.createRev}
		}
	}
	return out, nil
}

// commitBatch applies ops in one transaction, as commit applies one: a
// condition that does not hold is recorded in its result, not returned,
// so that the batch's other writes commit; the results are recorded
// afresh on every run of the function.
func (s *Store[T]) commitBatch(ops []writeOp) ([]writeResult, error) {
	res := make([]writeResult, len(ops))
	fn := func(tx *bolt.Tx) error {
		events := make([]rawEvent, 0, len(ops))
		for i, op := range ops {
			r, ev, err := apply(tx, op, s.cfg.history)
			res[i] = r
			if err != nil {
				return err
			}
			if r.failed == nil {
				events = append(events, ev)
			}
		}
		if len(events) > 0 {
			tx.OnCommit(func() {
				for _, ev := range events {
					s.hub.committed(ev)
				}
			})
		}
		return nil
	}
	if err := s.committer.run(fn); err != nil {
		return nil, dbError(err)
	}
	return res, nil
}
