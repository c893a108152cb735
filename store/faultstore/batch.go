package faultstore

import (
	"context"

	"github.com/converge-go/converge/store"
)

var _ store.BatchWriter[int] = (*Store[int])(nil)

// WriteBatch writes the batch to the wrapped store with store.WriteBatch
// (in one batch if it is a store.BatchWriter) through the faults as one
// call, OpBatch, whose Key is the first write's: a failure, an outage or
// an ended delay refuses the batch whole before it is sent, with an error
// matching ErrNotSent; a Lose decision applies it and answers each write
// with a LostResponseError holding its real answer.
func (s *Store[T]) WriteBatch(ctx context.Context, writes []store.Write[T]) ([]store.WriteResult[T], error) {
	if ctx == nil {
		return store.WriteBatch(ctx, s.inner, writes) // refused: ErrInvalid
	}
	if err := store.ValidateBatch(writes); err != nil {
		return nil, err
	}
	c := Call{Op: OpBatch}
	if len(writes) > 0 {
		c.Key = writes[0].Key
	}
	ctx, d, err := s.enter(ctx, c)
	if err != nil {
		return nil, err
	}
	res, err := store.WriteBatch(ctx, s.inner, writes)
	if err != nil {
		return nil, err
	}
	for i, r := range res {
		var rev int64
		if writes[i].Delete {
			rev = r.Object.Revision
		}
		if r.Err == nil {
			s.writes.Add(1)
		}
		if d.Fault == Lose {
			res[i] = store.WriteResult[T]{Err: &LostResponseError[T]{Op: OpBatch, Object: r.Object, Revision: rev, Err: r.Err}}
		}
	}
	return res, nil
}
