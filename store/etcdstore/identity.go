package etcdstore

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"

	"github.com/converge-go/converge/store"
	clientv3 "go.etcd.io/etcd/client/v3"
)

var _ store.Identifier = (*Store[int])(nil)

// Identity returns the store's identity (store.Identifier), read from etcd
// on every call: "etcd:", the cluster's ID (from the response's header),
// the Store's prefix, and a record of 128 random bits kept at the etcd key
// that is the prefix itself (a key no Store key maps to, and which List and
// Watch leave out). The first call on a cluster without the record creates
// it, in a transaction that only one of several racing clients wins, so
// every client of the prefix sees one identity.
//
// The identity changes whenever the store it reads is another one:
//
//   - a cluster whose data was wiped and which started again has no
//     record, so it gets a new one, even with the configuration of the old
//     cluster (etcd derives the cluster ID from the initial cluster token
//     and the peer URLs alone, so two clusters bootstrapped alike share
//     one);
//   - a cluster made by etcdutl snapshot restore has the record of the
//     snapshot but a new cluster ID when it is given its own
//     --initial-cluster-token (or other peer URLs). Restored with the token
//     and URLs of the cluster the snapshot came from, it has the old ID and
//     reads as the same store: then restore with --bump-revision and
//     --mark-compacted, so that its revisions continue above any a client
//     has seen;
//   - another prefix of the same cluster is another store.
//
// Two clients of one prefix of one cluster see one identity. Deleting the
// record by hand gives the store a new identity at the next call: clients
// then treat it as another store, which is the safe mistake. A record not
// written by this package fails with an error matching store.ErrInvalid;
// delete it. So does the record of a prefix that Restore is restoring, or
// failed to restore, until a restore is done. Identity fails with store.ErrUnavailable when the cluster
// cannot be reached, and needs read and write access to the prefix key.
func (s *Store[T]) Identity(ctx context.Context) (string, error) {
	if err := s.check(ctx); err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	rctx := clientv3.WithRequireLeader(ctx)
	resp, err := s.client.Get(rctx, s.prefix)
	if err != nil {
		return "", requestError(ctx, err, "identity")
	}
	if len(resp.Kvs) > 0 {
		return s.identity(resp.Header.ClusterId, string(resp.Kvs[0].Value))
	}
	made := rand.Text()
	tresp, err := s.client.Txn(rctx).
		If(clientv3.Compare(clientv3.CreateRevision(s.prefix), "=", 0)).
		Then(clientv3.OpPut(s.prefix, made)).
		Else(clientv3.OpGet(s.prefix)).
		Commit()
	if err != nil {
		return "", requestError(ctx, err, "identity")
	}
	if tresp.Succeeded {
		return s.identity(tresp.Header.ClusterId, made)
	}
	kv := first(tresp.Responses[0])
	if kv == nil {
		// Unreachable: the else branch runs only when the record exists.
		return "", fmt.Errorf("%w: etcdstore: identity record at %q neither created nor read", store.ErrUnavailable, s.prefix)
	}
	return s.identity(tresp.Header.ClusterId, string(kv.Value))
}

// identity makes the Store's identity from the cluster's ID and the record
// read at the prefix key, which must be one this package writes: 26
// characters of base32 (crypto/rand.Text).
func (s *Store[T]) identity(cluster uint64, record string) (string, error) {
	if strings.HasPrefix(record, restoreMark) {
		return "", fmt.Errorf("%w: etcdstore: a restore into %q has not finished: if none is running, delete the prefix and restore again", store.ErrInvalid, s.prefix)
	}
	if len(record) != 26 || strings.Trim(record, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") != "" {
		return "", fmt.Errorf("%w: etcdstore: the identity record at %q holds %q, which this package did not write", store.ErrInvalid, s.prefix, record)
	}
	return fmt.Sprintf("etcd:%016x:%s:%s", cluster, s.prefix, record), nil
}

// isRecord reports whether the etcd key is the Store's identity record,
// which List and Watch leave out.
func (s *Store[T]) isRecord(key []byte) bool { return string(key) == s.prefix }
