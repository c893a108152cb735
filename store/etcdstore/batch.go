package etcdstore

import (
	"context"
	"fmt"

	"github.com/converge-go/converge/store"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A batch is sent in Txns within etcd's default limits: --max-txn-ops
// (128), which bounds a Txn's writes plus the operations of its largest
// nested Txn, and --max-request-bytes (1.5 MiB), of which batchTxnBytes
// go to keys and values.
const (
	batchTxnOps   = 128
	batchTxnBytes = 1 << 20
)

var _ store.BatchWriter[int] = (*Store[int])(nil)

// WriteBatch commits writes in one etcd Txn, all at one revision, or in
// several when the batch passes etcd's default limits (about 126 writes,
// fewer with many guards, and 1 MiB of keys and values per Txn), each
// atomic (store.BatchWriter). Each write
// is a Txn of its own nested in that one: its revision and guards are
// compared, against the store as it was before the Txn, and a refused
// write reports what its compares found, from the same snapshot, while
// the others land. A Txn that fails (store.ErrUnavailable, the context's
// error) fails each of its writes, which may or may not have landed, and
// each write after them, which was not sent.
func (s *Store[T]) WriteBatch(ctx context.Context, writes []store.Write[T]) ([]store.WriteResult[T], error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	if err := store.ValidateBatch(writes); err != nil {
		return nil, err
	}
	data := make([]string, len(writes))
	for i, w := range writes {
		if w.Delete {
			continue
		}
		var err error
		if data[i], err = s.encode(w.Value); err != nil {
			return nil, fmt.Errorf("batch write %d: %w", i, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]store.WriteResult[T], len(writes))
	var failed error
	for start := 0; start < len(writes); {
		end := s.batchEnd(writes, data, start)
		if failed == nil {
			failed = s.commitPart(ctx, writes[start:end], data[start:end], out[start:end])
		}
		if failed != nil {
			for i := start; i < end; i++ {
				out[i].Err = failed
			}
		}
		start = end
	}
	return out, nil
}

// batchEnd returns the end of the part of the batch that starts at start.
func (s *Store[T]) batchEnd(writes []store.Write[T], data []string, start int) int {
	size, nested := 0, 0
	for i := start; i < len(writes); i++ {
		n := len(s.prefix) + len(writes[i].Key) + len(data[i])
		// A write's Txn: 1 compare per guard and 1 for its revision,
		// 2 operations when it succeeds, 1 read per guard and 1 of the
		// key when it fails.
		nested = max(nested, 2, 1+len(writes[i].Guards))
		if i > start && (i-start+nested > batchTxnOps || size+n > batchTxnBytes) {
			return i
		}
		size += n
	}
	return len(writes)
}

// commitPart commits one part of a batch in one Txn and fills its
// results; it returns the Txn's error.
func (s *Store[T]) commitPart(ctx context.Context, writes []store.Write[T], data []string, out []store.WriteResult[T]) error {
	ops := make([]clientv3.Op, len(writes))
	for i, w := range writes {
		ops[i] = s.nestedWrite(w, data[i])
	}
	resp, err := s.client.Txn(clientv3.WithRequireLeader(ctx)).Then(ops...).Commit()
	if err != nil {
		return requestError(ctx, err, "batch of %d writes from %q", len(writes), writes[0].Key)
	}
	if len(resp.Responses) != len(writes) {
		return fmt.Errorf("%w: etcdstore: batch Txn answered %d writes of %d", store.ErrUnavailable, len(resp.Responses), len(writes))
	}
	rev := resp.Header.Revision
	for i, w := range writes {
		nested := (*clientv3.TxnResponse)(resp.Responses[i].GetResponseTxn())
		out[i] = s.nestedResult(w, nested, rev)
	}
	return nil
}

// nestedWrite is the Txn of one write, as Create, Update and Delete make
// theirs (s.txn): compares, then the write, else the reads that explain a
// failure.
func (s *Store[T]) nestedWrite(w store.Write[T], data string) clientv3.Op {
	full := s.prefix + w.Key
	var cmps []clientv3.Cmp
	var then []clientv3.Op
	switch {
	case w.Delete:
		cmps = expect(full, w.Revision, len(w.Guards))
		then = []clientv3.Op{clientv3.OpDelete(full)}
	case w.Revision == 0:
		cmps = []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(full), "=", 0)}
		then = []clientv3.Op{clientv3.OpPut(full, data)}
	default:
		cmps = expect(full, w.Revision, len(w.Guards))
		then = []clientv3.Op{clientv3.OpGet(full, clientv3.WithKeysOnly()), clientv3.OpPut(full, data)}
	}
	els := []clientv3.Op{clientv3.OpGet(full, clientv3.WithKeysOnly())}
	for _, g := range w.Guards {
		gk := s.prefix + g.Key
		target := clientv3.ModRevision(gk)
		if g.Created || g.Revision == 0 {
			target = clientv3.CreateRevision(gk)
		}
		cmps = append(cmps, clientv3.Compare(target, "=", g.Revision))
		els = append(els, clientv3.OpGet(gk, clientv3.WithKeysOnly()))
	}
	return clientv3.OpTxn(cmps, then, els)
}

// nestedResult is the result of one write from its nested Txn's answer;
// rev is the revision of the batch's Txn.
func (s *Store[T]) nestedResult(w store.Write[T], resp *clientv3.TxnResponse, rev int64) store.WriteResult[T] {
	var r store.WriteResult[T]
	if resp == nil {
		r.Err = fmt.Errorf("%w: etcdstore: batch Txn answered %q with no Txn", store.ErrUnavailable, w.Key)
		return r
	}
	op := updateOp
	switch {
	case w.Delete:
		op = deleteOp
	case w.Revision == 0:
		op = createOp
	}
	if !resp.Succeeded {
		r.Err = s.failure(resp, op, w.Key, w.Revision, w.Guards)
		return r
	}
	r.Object = store.Object[T]{Key: w.Key, Revision: rev}
	switch op {
	case createOp:
		r.Object.Value, r.Object.CreateRevision = w.Value, rev
	case updateOp:
		r.Object.Value = w.Value
		if len(resp.Responses) == 2 {
			if prev := first(resp.Responses[0]); prev != nil {
				r.Object.CreateRevision = prev.CreateRevision
			}
		}
	}
	return r
}
