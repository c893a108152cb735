package etcdstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/converge-go/converge/store"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Compact discards the cluster's history up to and including rev, for every
// key of the cluster (etcd compacts the whole keyspace, not a prefix):
// afterwards a Watch after a revision below rev fails with
// store.ErrCompacted, and a Watch after rev or later works. It waits until
// the compaction is applied.
//
// etcd keeps the current revision whatever it compacts: when rev is the
// cluster's current revision, the history is compacted up to rev-1 only, so
// a Watch after rev-1 still delivers the write at rev. A rev that was
// already compacted is a no-op; a rev ahead of the cluster's revision fails
// with store.ErrInvalid. Production clusters usually compact by themselves
// (etcd's --auto-compaction-retention); this is for tests and tools.
func (s *Store[T]) Compact(ctx context.Context, rev int64) error {
	if err := store.ValidateRevision(rev); err != nil {
		return err
	}
	cur, err := s.Revision(ctx)
	if err != nil {
		return err
	}
	if rev > cur {
		return fmt.Errorf("%w: compact at revision %d, ahead of the cluster's revision %d", store.ErrInvalid, rev, cur)
	}
	if rev == 0 {
		return nil
	}
	// etcd's Compact(r) keeps revision r itself readable; the store's
	// contract discards rev, so compact at rev+1 when it exists.
	target := min(rev+1, cur)
	_, err = s.client.Compact(clientv3.WithRequireLeader(ctx), target, clientv3.WithCompactPhysical())
	if errors.Is(err, rpctypes.ErrCompacted) {
		return nil
	}
	if err != nil {
		return requestError(ctx, err, "compact at revision %d", rev)
	}
	return nil
}
