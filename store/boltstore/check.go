package boltstore

import (
	"context"
	"fmt"

	"github.com/converge-go/converge/store"
	bolt "go.etcd.io/bbolt"
)

var _ store.Checker = (*Store[int])(nil)

// Check returns nil if key's revision is revision and every guard holds,
// in one read transaction, and writes nothing (store.Checker); else the
// error an Update would return: store.ErrGuardFailed, store.ErrNotFound
// or store.ErrConflict.
func (s *Store[T]) Check(ctx context.Context, key string, revision int64, guards ...store.Guard) error {
	exit, err := s.enter(ctx)
	if err != nil {
		return err
	}
	defer exit()
	if err := store.ValidateKey(key); err != nil {
		return err
	}
	if err := store.ValidateGuards(guards); err != nil {
		return err
	}
	if err := store.ValidateRevision(revision); err != nil {
		return err
	}
	var failed error
	err = view(s.db, func(tx *bolt.Tx) error {
		b, err := openBuckets(tx)
		if err != nil {
			return err
		}
		if failed, err = checkGuards(b.objects, guards); err != nil || failed != nil {
			return err
		}
		rec := b.objects.Get([]byte(key))
		if rec == nil {
			failed = fmt.Errorf("%w: %q", store.ErrNotFound, key)
			return nil
		}
		_, rev, _, err := decodeObject(key, rec)
		if err == nil && rev != revision {
			failed = fmt.Errorf("%w: %q is at revision %d, not %d", store.ErrConflict, key, rev, revision)
		}
		return err
	})
	if err != nil {
		return dbError(err)
	}
	return failed
}
