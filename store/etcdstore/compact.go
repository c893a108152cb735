package etcdstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/converge-go/converge/store"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Compact discards the cluster's history before rev, for every key of the
// cluster (etcd compacts the whole keyspace, not a prefix): afterwards a
// Watch after a revision below rev fails with store.ErrCompacted, and a
// Watch after rev or later works, including the previous values its
// deletions carry. It waits until the member that serves it has applied
// the compaction; other members of a cluster apply it on their own, and
// until they do a Watch they serve may still deliver the older history.
//
// A rev that was already compacted is a no-op; a rev ahead of the
// cluster's revision fails with store.ErrInvalid. Production clusters
// usually compact by themselves (etcd's --auto-compaction-retention); this
// is for tests and tools.
func (s *Store[T]) Compact(ctx context.Context, rev int64) error {
	if err := s.check(ctx); err != nil {
		return err
	}
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
	// etcd's Compact(rev) keeps revision rev readable, and with it the
	// value each key had at rev, which a deletion after rev reports as its
	// previous value. Watch refuses to start before rev itself (see
	// watcher.run), which is the store's contract.
	_, err = s.client.Compact(clientv3.WithRequireLeader(ctx), rev, clientv3.WithCompactPhysical())
	if errors.Is(err, rpctypes.ErrCompacted) {
		return nil
	}
	if err != nil {
		return requestError(ctx, err, "compact at revision %d", rev)
	}
	return nil
}
