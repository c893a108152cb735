package robustness_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/boltstore"
	"github.com/converge-go/converge/store/etcdstore"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// chaosStore is a backend's store of replica sets, with its Compact.
type chaosStore interface {
	store.Store[*replicaSet]
	Compact(ctx context.Context, rev int64) error
}

// change is one key's part of a foreign transaction: a spec, or a deletion.
type change struct {
	key      string
	replicas int
	delete   bool
}

// foreignWriter is another program writing the controller's store behind
// its back: it applies changes, in one transaction where the backend has
// them (etcd), records every write it made in l, and returns how many it
// made.
type foreignWriter interface {
	apply(ctx context.Context, changes []change, l *ledger) (int, error)
}

// chaosBackend opens a new, empty store for one run of a chaos or soak
// test, keeping history revisions for watches to resume from where the
// backend retains them itself (etcd keeps everything until compacted), with
// a foreign writer of that store.
type chaosBackend struct {
	name string
	open func(t *testing.T, history int) (chaosStore, foreignWriter)
	// heartbeat is the controllers' Options.HeartbeatInterval: short, but
	// longer than a progress report takes to come back (on etcd, a
	// linearizable read, then a request etcd may ignore while the watch
	// catches up, retried every 250 ms).
	heartbeat time.Duration
	// oneSeed runs TestChaosConvergesOnEveryBackend with one seed unless
	// CONVERGE_CHAOS_SEEDS asks for more (a backend slow enough to weigh on
	// the default run).
	oneSeed bool
}

func chaosBackends() []chaosBackend {
	return []chaosBackend{
		{name: "memory", heartbeat: 50 * time.Millisecond, open: func(t *testing.T, history int) (chaosStore, foreignWriter) {
			m := store.NewMemory[*replicaSet](store.WithHistory(history), store.WithTombstones(history))
			t.Cleanup(func() { _ = m.Close() })
			return m, sequentialWriter{m}
		}},
		{name: "bolt", heartbeat: 50 * time.Millisecond, open: func(t *testing.T, history int) (chaosStore, foreignWriter) {
			s, err := boltstore.Open[*replicaSet](filepath.Join(t.TempDir(), "chaos.db"), boltstore.WithHistory(history))
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			return s, sequentialWriter{s}
		}},
		{name: "etcd", heartbeat: time.Second, open: func(t *testing.T, history int) (chaosStore, foreignWriter) {
			members, err := startEtcdCluster(t, 1)
			require.NoError(t, err)
			client, err := newEtcdClient(t, members)
			require.NoError(t, err)
			s, err := etcdstore.New[*replicaSet](client, chaosPrefix)
			require.NoError(t, err)
			return s, etcdTxnWriter{client: client, prefix: chaosPrefix}
		}},
		httpChaosBackend(),
	}
}

// chaosPrefix is the etcd key prefix of the controller's store.
const chaosPrefix = "chaos/"

// sequentialWriter writes the changes one key after another: memory and
// bolt have no multi-key transactions.
type sequentialWriter struct{ s store.Store[*replicaSet] }

func (w sequentialWriter) apply(ctx context.Context, changes []change, l *ledger) (int, error) {
	n := 0
	for _, ch := range changes {
		var wr write
		var err error
		if ch.delete {
			wr, err = deleteSpec(ctx, w.s, ch.key)
		} else {
			wr, err = writeSpec(ctx, w.s, ch.key, ch.replicas)
		}
		switch {
		case err == nil:
			l.record(ch.key, wr)
			n++
		case errors.Is(err, errSkipped), errors.Is(err, store.ErrConflict):
		default:
			return n, err
		}
	}
	return n, nil
}

// etcdTxnWriter writes every change in one etcd transaction, conditioned
// on the revisions it read, with keys and values encoded as etcdstore
// encodes them (prefix + key; the JSON codec): the keys then share the
// transaction's revision, as another etcd client's writes would.
type etcdTxnWriter struct {
	client *clientv3.Client
	prefix string
}

func (w etcdTxnWriter) apply(ctx context.Context, changes []change, l *ledger) (int, error) {
	var cmps []clientv3.Cmp
	var ops []clientv3.Op
	var done []change
	codec := store.JSON[*replicaSet]{}
	for _, ch := range changes {
		k := w.prefix + ch.key
		resp, err := w.client.Get(ctx, k)
		if err != nil {
			return 0, err
		}
		var cur *replicaSet
		var modRev int64
		if len(resp.Kvs) == 1 {
			modRev = resp.Kvs[0].ModRevision
			if cur, err = codec.Unmarshal(resp.Kvs[0].Value); err != nil {
				return 0, err
			}
		}
		switch {
		case ch.delete && cur == nil, !ch.delete && cur != nil && cur.Spec.Replicas == ch.replicas:
			continue // nothing to change
		case ch.delete:
			ops = append(ops, clientv3.OpDelete(k))
		default:
			next := &replicaSet{Meta: apistore.Meta{Generation: 1}, Spec: rsSpec{Replicas: ch.replicas}}
			if cur != nil {
				next = cur
				next.Spec = rsSpec{Replicas: ch.replicas}
				next.Generation++
			}
			b, err := codec.Marshal(next)
			if err != nil {
				return 0, err
			}
			ops = append(ops, clientv3.OpPut(k, string(b)))
		}
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(k), "=", modRev))
		done = append(done, ch)
	}
	if len(ops) == 0 {
		return 0, nil
	}
	resp, err := w.client.Txn(ctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		return 0, err
	}
	if !resp.Succeeded {
		return 0, nil // another writer got there first
	}
	for _, ch := range done {
		l.record(ch.key, write{rev: resp.Header.Revision, replicas: ch.replicas, deleted: ch.delete})
	}
	return len(done), nil
}
