package etcdstore

import (
	"context"
	"fmt"

	"github.com/converge-go/converge/store"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Create stores value at key if the key does not exist (else
// store.ErrExists) and every guard holds (else store.ErrGuardFailed), in one
// transaction that compares the key's CreateRevision with 0.
func (s *Store[T]) Create(ctx context.Context, key string, value T, guards ...store.Guard) (store.Object[T], error) {
	data, err := s.checkWrite(ctx, key, &value, 0, guards)
	if err != nil {
		return store.Object[T]{}, err
	}
	full := s.prefix + key
	cmps := make([]clientv3.Cmp, 1, 1+len(guards))
	cmps[0] = clientv3.Compare(clientv3.CreateRevision(full), "=", 0)
	resp, err := s.txn(ctx, full, guards, cmps, clientv3.OpPut(full, data))
	if err != nil {
		return store.Object[T]{}, requestError(ctx, err, "create %q", key)
	}
	if !resp.Succeeded {
		return store.Object[T]{}, s.failure(resp, createOp, key, 0, guards)
	}
	rev := resp.Header.Revision
	return store.Object[T]{Key: key, Value: value, Revision: rev, CreateRevision: rev}, nil
}

// Update replaces the value at key if the key's Revision (etcd's
// ModRevision) is still revision (else store.ErrConflict, or
// store.ErrNotFound if the key does not exist) and every guard holds (else
// store.ErrGuardFailed), in one transaction.
//
// The returned object's CreateRevision comes from a keys-only read of the
// key in the transaction's success branch, before the put: etcd answers it
// from its in-memory index, whereas the put's previous key-value
// (WithPrevKV) would read the old value from the backend on every member
// and send it back.
func (s *Store[T]) Update(ctx context.Context, key string, value T, revision int64, guards ...store.Guard) (store.Object[T], error) {
	data, err := s.checkWrite(ctx, key, &value, revision, guards)
	if err != nil {
		return store.Object[T]{}, err
	}
	full := s.prefix + key
	resp, err := s.txn(ctx, full, guards, expect(full, revision, len(guards)),
		clientv3.OpGet(full, clientv3.WithKeysOnly()), clientv3.OpPut(full, data))
	if err != nil {
		return store.Object[T]{}, requestError(ctx, err, "update %q", key)
	}
	if !resp.Succeeded {
		return store.Object[T]{}, s.failure(resp, updateOp, key, revision, guards)
	}
	obj := store.Object[T]{Key: key, Value: value, Revision: resp.Header.Revision}
	if len(resp.Responses) == 2 {
		if prev := first(resp.Responses[0]); prev != nil {
			obj.CreateRevision = prev.CreateRevision
		}
	}
	return obj, nil
}

// Delete removes key if its Revision is still revision (else
// store.ErrConflict, or store.ErrNotFound) and every guard holds (else
// store.ErrGuardFailed), in one transaction. It returns the revision of the
// delete.
func (s *Store[T]) Delete(ctx context.Context, key string, revision int64, guards ...store.Guard) (int64, error) {
	if _, err := s.checkWrite(ctx, key, nil, revision, guards); err != nil {
		return 0, err
	}
	full := s.prefix + key
	resp, err := s.txn(ctx, full, guards, expect(full, revision, len(guards)), clientv3.OpDelete(full))
	if err != nil {
		return 0, requestError(ctx, err, "delete %q", key)
	}
	if !resp.Succeeded {
		return 0, s.failure(resp, deleteOp, key, revision, guards)
	}
	return resp.Header.Revision, nil
}

// checkWrite validates a write's arguments and encodes its value (none for a
// delete, whose value is nil), then checks ctx.
func (s *Store[T]) checkWrite(ctx context.Context, key string, value *T, revision int64, guards []store.Guard) (string, error) {
	if err := s.check(ctx); err != nil {
		return "", err
	}
	if err := store.ValidateKey(key); err != nil {
		return "", err
	}
	if err := store.ValidateRevision(revision); err != nil {
		return "", err
	}
	if err := store.ValidateGuards(guards); err != nil {
		return "", err
	}
	var data string
	if value != nil {
		var err error
		if data, err = s.encode(*value); err != nil {
			return "", err
		}
	}
	return data, ctx.Err()
}

// expect returns the compares that hold when the key's ModRevision is
// revision, with room for the compares of guards more. No object has
// revision 0, so for 0 the compares never hold and the failure is reported
// as a conflict or as not found.
func expect(full string, revision int64, guards int) []clientv3.Cmp {
	if revision == 0 {
		return append(make([]clientv3.Cmp, 0, 2+guards),
			clientv3.Compare(clientv3.CreateRevision(full), ">", 0),
			clientv3.Compare(clientv3.ModRevision(full), "=", 0))
	}
	return append(make([]clientv3.Cmp, 0, 1+guards),
		clientv3.Compare(clientv3.ModRevision(full), "=", revision))
}

// txn runs one transaction: if cmps and every guard hold, then; else read
// the key and every guarded key (revisions only) so that failure can tell
// which condition failed, from the same atomic snapshot: a failed write
// costs no second request.
func (s *Store[T]) txn(ctx context.Context, full string, guards []store.Guard, cmps []clientv3.Cmp, then ...clientv3.Op) (*clientv3.TxnResponse, error) {
	els := make([]clientv3.Op, 0, 1+len(guards))
	els = append(els, clientv3.OpGet(full, clientv3.WithKeysOnly()))
	for _, g := range guards {
		gk := s.prefix + g.Key
		target := clientv3.ModRevision(gk)
		if g.Created || g.Revision == 0 {
			target = clientv3.CreateRevision(gk)
		}
		cmps = append(cmps, clientv3.Compare(target, "=", g.Revision))
		els = append(els, clientv3.OpGet(gk, clientv3.WithKeysOnly()))
	}
	return s.client.Txn(clientv3.WithRequireLeader(ctx)).If(cmps...).Then(then...).Else(els...).Commit()
}

type writeOp uint8

const (
	createOp writeOp = iota
	updateOp
	deleteOp
)

// failure explains a transaction whose compares failed, from its else
// branch: the first guard that did not hold, else what the key holds.
func (s *Store[T]) failure(resp *clientv3.TxnResponse, op writeOp, key string, revision int64, guards []store.Guard) error {
	if len(resp.Responses) != 1+len(guards) {
		return fmt.Errorf("%w: etcdstore: transaction on %q failed with %d reads, want %d", store.ErrUnavailable, key, len(resp.Responses), 1+len(guards))
	}
	for i, g := range guards {
		var have int64
		if kv := first(resp.Responses[1+i]); kv != nil {
			have = kv.ModRevision
			if g.Created {
				have = kv.CreateRevision
			}
		}
		if have != g.Revision {
			what := "revision"
			if g.Created {
				what = "create revision"
			}
			return fmt.Errorf("%w: %s of %q is %d, want %d", store.ErrGuardFailed, what, g.Key, have, g.Revision)
		}
	}
	kv := first(resp.Responses[0])
	switch {
	case op == createOp && kv != nil:
		return fmt.Errorf("%w: %q", store.ErrExists, key)
	case op != createOp && kv == nil:
		return fmt.Errorf("%w: %q", store.ErrNotFound, key)
	case op != createOp:
		return fmt.Errorf("%w: %q is at revision %d, not %d", store.ErrConflict, key, kv.ModRevision, revision)
	}
	// Unreachable: the else branch read the state that failed a compare.
	return fmt.Errorf("%w: etcdstore: create of %q failed, yet the key is absent and every guard holds", store.ErrConflict, key)
}

// first returns the first key-value of a range response in a transaction,
// or nil.
func first(r *pb.ResponseOp) *mvccpb.KeyValue {
	kvs := r.GetResponseRange().GetKvs()
	if len(kvs) == 0 {
		return nil
	}
	return kvs[0]
}
