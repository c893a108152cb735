package etcdstore

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"iter"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/snapshot"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// restoreMark starts the identity record of a prefix being restored: no
// identity this package makes starts so, so Identity refuses the prefix
// until the restore is done.
const restoreMark = "restoring:"

// Restore batches: etcd refuses a transaction of more than 128 operations
// (--max-txn-ops) or a request over 1.5 MiB (--max-request-bytes) by
// default.
const (
	restoreBatchOps   = 100
	restoreBatchBytes = 1 << 20
)

// Restore writes the objects of the snapshot r holds (store/snapshot) under
// prefix, which must hold no key at all, and makes the prefix a store by
// the rule of the store package's doc (# Snapshots and restores):
//
//   - it has an identity of its own: a new record, so neither the
//     snapshot's identity nor that of a store the prefix held before;
//   - its revisions are the cluster's: the objects are written in
//     transactions of at most 100 keys, which take the cluster's next
//     revisions, and the cluster is then compacted up to the last of them
//     (Restored.Revision), so that a Watch after any revision from before
//     the restore fails with store.ErrCompacted and the client re-lists.
//     etcd compacts the whole cluster: the watches of other prefixes
//     resuming from before the restore re-list too. A client whose old
//     revision is beyond the cluster's (a snapshot of another cluster, or
//     of bbolt) is not reached by the compaction; the new identity tells
//     it that this is another store;
//   - its objects are the snapshot's keys and value bytes (to be read with
//     the codec they were saved with), with the revisions of the restore's
//     transactions.
//
// The snapshot is read and checked whole before anything is written (it is
// held in memory), so a damaged one (snapshot.ErrDamaged,
// snapshot.ErrFormat) writes nothing, nor does one holding a value the
// check of WithValueCheck refuses (snapshot.ErrUnservable and
// store.ErrInvalid, naming the key). The snapshot's revisions are not
// kept, so any revision restores: the cluster's go on from its own. While the restore runs, the prefix's
// identity record marks it, so that Identity fails with store.ErrInvalid
// instead of presenting half a store, and a second restore cannot mix its
// writes in; a restore that fails midway (the cluster unreachable) leaves
// the mark and what it wrote: delete the prefix (etcdctl del --prefix) and
// restore again. A prefix that holds any key (an identity record included)
// is refused with store.ErrExists; a nil argument or a malformed prefix
// with store.ErrInvalid. opts are checked as New checks them for a byte
// store; only WithValueCheck changes what Restore does.
func Restore(ctx context.Context, client *clientv3.Client, prefix string, r io.Reader, opts ...Option) (snapshot.Restored, error) {
	s, err := New[[]byte](client, prefix, opts...)
	if err != nil {
		return snapshot.Restored{}, err
	}
	if err := checkContext(ctx); err != nil {
		return snapshot.Restored{}, err
	}
	if r == nil {
		return snapshot.Restored{}, fmt.Errorf("%w: etcdstore: nil snapshot reader", store.ErrInvalid)
	}
	_, cfg, _ := newConfig[[]byte](opts) // checked by New
	info, objs, err := snapshot.Read(r, cfg.valueCheck)
	if err != nil {
		return snapshot.Restored{}, fmt.Errorf("etcdstore: restore into %q: %w", prefix, err)
	}
	mark := restoreMark + rand.Text()
	if err := s.markRestore(ctx, mark); err != nil {
		return snapshot.Restored{}, err
	}
	for batch := range batches(objs) {
		ops := make([]clientv3.Op, len(batch))
		for i, o := range batch {
			ops[i] = clientv3.OpPut(prefix+o.Key, string(o.Value))
		}
		if _, err := s.whileMarked(ctx, mark, ops...); err != nil {
			return snapshot.Restored{}, err
		}
	}
	record := rand.Text()
	resp, err := s.whileMarked(ctx, mark, clientv3.OpPut(prefix, record))
	if err != nil {
		return snapshot.Restored{}, err
	}
	rev := resp.Header.Revision
	if err := s.Compact(ctx, rev); err != nil {
		return snapshot.Restored{}, fmt.Errorf("etcdstore: restore into %q: the objects are written, the history before them not compacted: %w", prefix, err)
	}
	id, err := s.identity(resp.Header.ClusterId, record)
	return snapshot.Restored{Snapshot: info, Identity: id, Revision: rev}, err
}

// markRestore puts mark in the prefix's identity record if no key has the
// prefix.
func (s *Store[T]) markRestore(ctx context.Context, mark string) error {
	empty := clientv3.Compare(clientv3.CreateRevision(s.prefix), "=", 0).WithPrefix()
	resp, err := s.client.Txn(clientv3.WithRequireLeader(ctx)).If(empty).Then(clientv3.OpPut(s.prefix, mark)).Commit()
	if err != nil {
		return requestError(ctx, err, "restore into %q", s.prefix)
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: etcdstore: restore into %q: the prefix holds keys; restore into an empty one", store.ErrExists, s.prefix)
	}
	return nil
}

// whileMarked commits ops if the prefix's identity record is still mark.
func (s *Store[T]) whileMarked(ctx context.Context, mark string, ops ...clientv3.Op) (*clientv3.TxnResponse, error) {
	marked := clientv3.Compare(clientv3.Value(s.prefix), "=", mark)
	resp, err := s.client.Txn(clientv3.WithRequireLeader(ctx)).If(marked).Then(ops...).Commit()
	if err != nil {
		return nil, requestError(ctx, err, "restore into %q", s.prefix)
	}
	if !resp.Succeeded {
		return nil, fmt.Errorf("%w: etcdstore: restore into %q: its mark changed (another restore, or a delete)", store.ErrConflict, s.prefix)
	}
	return resp, nil
}

// batches yields objs in runs of at most restoreBatchOps objects and,
// unless one object alone is larger, restoreBatchBytes bytes.
func batches(objs []store.Object[[]byte]) iter.Seq[[]store.Object[[]byte]] {
	return func(yield func([]store.Object[[]byte]) bool) {
		start, size := 0, 0
		for i, o := range objs {
			n := len(o.Key) + len(o.Value)
			if i > start && (i-start == restoreBatchOps || size+n > restoreBatchBytes) {
				if !yield(objs[start:i]) {
					return
				}
				start, size = i, 0
			}
			size += n
		}
		if start < len(objs) {
			yield(objs[start:])
		}
	}
}
