package boltstore

import (
	"context"
	"fmt"

	"github.com/converge-go/converge/store"
	bolt "go.etcd.io/bbolt"
)

// Compact discards the history up to and including rev, ahead of the
// automatic trimming to WithHistory revisions: a later Watch after an older
// revision fails with store.ErrCompacted, and a watch still reading the
// discarded part of the history ends with it. Objects are not affected.
// Compacting to a revision already discarded does nothing; a revision beyond
// the current one is refused with store.ErrInvalid.
func (s *Store[T]) Compact(ctx context.Context, rev int64) error {
	if err := store.ValidateRevision(rev); err != nil {
		return err
	}
	exit, err := s.enter(ctx)
	if err != nil {
		return err
	}
	defer exit()
	var invalid error
	err = update(s.db, func(tx *bolt.Tx) error {
		b, err := openBuckets(tx)
		if err != nil {
			return err
		}
		cur, err := readCounter(b.meta, revisionKey)
		if err != nil {
			return err
		}
		if rev > cur {
			invalid = fmt.Errorf("%w: compact to revision %d beyond the current revision %d", store.ErrInvalid, rev, cur)
			return nil
		}
		compacted, err := readCounter(b.meta, compactedKey)
		if err != nil {
			return err
		}
		return prune(b, compacted, rev)
	})
	if err != nil {
		return dbError(err)
	}
	return invalid
}
