package etcdstore

import (
	"context"

	"github.com/converge-go/converge/store"
)

var _ store.Checker = (*Store[int])(nil)

// Check returns nil if key's revision (etcd's ModRevision) is revision and
// every guard holds, in one transaction that writes nothing (so it takes
// no revision and makes no event), as store.Checker asks; else the error
// an Update would return: store.ErrGuardFailed, store.ErrNotFound or
// store.ErrConflict.
func (s *Store[T]) Check(ctx context.Context, key string, revision int64, guards ...store.Guard) error {
	if _, err := s.checkWrite(ctx, key, nil, revision, guards); err != nil {
		return err
	}
	full := s.prefix + key
	resp, err := s.txn(ctx, full, guards, expect(full, revision, len(guards)))
	if err != nil {
		return requestError(ctx, err, "check %q", key)
	}
	if !resp.Succeeded {
		return s.failure(resp, updateOp, key, revision, guards)
	}
	return nil
}
