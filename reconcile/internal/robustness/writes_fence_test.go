package robustness_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/converge-go/converge/lock"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/boltstore"
	"github.com/converge-go/converge/store/etcdstore"
	"github.com/stretchr/testify/require"
)

// fenceBackend opens a store of replica sets and a store of lease records
// that share one keyspace, so that a write to the first can be guarded by a
// key of the second: two views of one byte store on memory and bolt, two
// etcdstore.Stores with one prefix on one etcd client.
type fenceBackend struct {
	name      string
	heartbeat time.Duration
	open      func(t *testing.T) (store.Store[*replicaSet], store.Store[lock.Record])
}

func fenceBackends() []fenceBackend {
	views := func(raw store.Store[[]byte]) (store.Store[*replicaSet], store.Store[lock.Record]) {
		return store.NewView[*replicaSet](raw, store.JSON[*replicaSet]{}), store.NewView[lock.Record](raw, store.JSON[lock.Record]{})
	}
	return []fenceBackend{
		{name: "memory", heartbeat: 50 * time.Millisecond, open: func(t *testing.T) (store.Store[*replicaSet], store.Store[lock.Record]) {
			raw := store.NewMemory[[]byte]()
			t.Cleanup(func() { _ = raw.Close() })
			return views(raw)
		}},
		{name: "bolt", heartbeat: 50 * time.Millisecond, open: func(t *testing.T) (store.Store[*replicaSet], store.Store[lock.Record]) {
			raw, err := boltstore.Open[[]byte](filepath.Join(t.TempDir(), "fence.db"))
			require.NoError(t, err)
			t.Cleanup(func() { _ = raw.Close() })
			return views(raw)
		}},
		{name: "etcd", heartbeat: time.Second, open: func(t *testing.T) (store.Store[*replicaSet], store.Store[lock.Record]) {
			members, err := startEtcdCluster(t, 1)
			require.NoError(t, err)
			client, err := newEtcdClient(t, members)
			require.NoError(t, err)
			objects, err := etcdstore.New[*replicaSet](client, "fence/")
			require.NoError(t, err)
			leases, err := etcdstore.New[lock.Record](client, "fence/")
			require.NoError(t, err)
			return objects, leases
		}},
	}
}

// TestDeposedLeadersWritesThroughTheControllerAreRejectedOnEveryBackend: a
// controller runs under a lock.Elector whose lease record lives in the
// objects' keyspace. While its reconcile is blocked, another replica takes
// the lease over (deletes the record and creates its own, so the term's
// fencing token no longer matches); the reconcile then writes status
// through req.Store, with no fencing code of its own: the write fails with
// store.ErrGuardFailed and the stored object is unchanged, on every
// backend. Its write during the term went through, and once the deposed
// leader knows it lost, the request's store still refuses to write.
func TestDeposedLeadersWritesThroughTheControllerAreRejectedOnEveryBackend(t *testing.T) {
	const job, leader = "objects/job", "leases/leader"
	for _, b := range fenceBackends() {
		t.Run(b.name, func(t *testing.T) {
			objects, leases := b.open(t)
			ctx := t.Context()
			_, err := writeSpec(ctx, objects, job, 1)
			require.NoError(t, err)
			lease, err := lock.NewLease(leases, leader, lock.LeaseOptions{Holder: "a", TTL: 3 * time.Second, RenewInterval: 500 * time.Millisecond})
			require.NoError(t, err)
			el, err := lock.NewElector(lease, lock.ElectorOptions{})
			require.NoError(t, err)

			inReconcile, takenOver := make(chan reconcile.Request[*replicaSet], 1), make(chan struct{})
			results := make(chan error, 2)
			var first sync.Once
			rec := reconcile.ReconcilerFunc[*replicaSet](func(ctx context.Context, req reconcile.Request[*replicaSet]) (reconcile.Result, error) {
				first.Do(func() {
					obj, err := bumpReady(ctx, req) // while the term is current
					results <- err
					req.Object = obj
					inReconcile <- req
					<-takenOver
					_, err = bumpReady(ctx, req) // deposed, not knowing it yet
					results <- err
				})
				return reconcile.Result{}, nil
			})
			c, err := reconcile.New[*replicaSet](objects, rec, reconcile.Options[*replicaSet]{
				Name:              "fenced",
				Prefix:            "objects/",
				HeartbeatInterval: b.heartbeat,
			})
			require.NoError(t, err)
			runCtx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- el.Run(runCtx, c.Run) }()
			defer func() {
				cancel()
				require.NoError(t, <-done, "the elector's Run")
			}()

			require.NoError(t, <-results, "the current term's status write was refused")
			req := <-inReconcile
			written := req.Object

			// Another replica takes the lease over while this one still
			// believes it leads.
			held, err := leases.Get(ctx, leader)
			require.NoError(t, err)
			require.Equal(t, "a", held.Value.Holder)
			_, err = leases.Delete(ctx, leader, held.Revision)
			require.NoError(t, err)
			taken, err := leases.Create(ctx, leader, lock.Record{Holder: "b"})
			require.NoError(t, err)
			require.NotEqual(t, held.CreateRevision, taken.CreateRevision, "the new holder's term has another fencing token")
			close(takenOver)
			err = <-results
			t.Logf("%s: the deposed leader's status write: %v", b.name, err)
			require.ErrorIs(t, err, store.ErrGuardFailed, "a deposed leader's status write was accepted")
			obj, err := objects.Get(ctx, job)
			require.NoError(t, err)
			require.Equal(t, written.Revision, obj.Revision, "the deposed leader's write changed the store")
			require.Equal(t, 1, obj.Value.Status.Ready, "the deposed leader's write changed the store")

			// Once it knows it lost, the request's store refuses too.
			waitFor(t, func() bool { return !el.IsLeader() }, "the deposed leader never noticed the takeover")
			_, err = req.Store.Update(ctx, job, written.Value, written.Revision)
			require.ErrorIs(t, err, store.ErrGuardFailed, "a write after the term ended was accepted")
			obj, err = objects.Get(ctx, job)
			require.NoError(t, err)
			require.Equal(t, written.Revision, obj.Revision, "a write after the term ended changed the store")
		})
	}
}
