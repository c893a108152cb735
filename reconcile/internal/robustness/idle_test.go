package robustness_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/owners"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/boltstore"
	"github.com/converge-go/converge/store/etcdstore"
	"github.com/converge-go/converge/store/httpstore/httpstoretest"
	"github.com/stretchr/testify/require"
)

type (
	familySpec   struct{ Size int }
	familyStatus struct{ Children int }
	family       = *resource.Resource[familySpec, familyStatus]
	familyKind   = resource.Kind[familySpec, familyStatus]
)

// ensureChildren is the reconciler of an owner under "owners/" that
// ensures its child under "children/" with store.CreateOrUpdate through
// the request's store, building it afresh each time, and records in its
// status that it did.
func ensureChildren(ctx context.Context, req reconcile.Request[family]) (reconcile.Result, error) {
	if req.Deleted || req.Deleting {
		return reconcile.Result{}, nil
	}
	child := "children/" + strings.TrimPrefix(req.Key, "owners/")
	_, err := store.CreateOrUpdate(ctx, req.Store, child, func(cur family, exists bool) (family, error) {
		next := &resource.Resource[familySpec, familyStatus]{Spec: familySpec{Size: req.Object.Value.Spec.Size}}
		next.Generation = 1
		if exists {
			next.Meta = cur.Meta
			next.Status, next.ObservedGeneration = cur.Status, cur.ObservedGeneration
		}
		next.Owners = []apistore.Owner{{Key: req.Key, UID: req.Object.CreateRevision, Block: true}}
		return next, nil
	})
	if err != nil {
		return reconcile.Result{}, err
	}
	_, err = resource.WriteStatus(ctx, req.Store, req.Object, familyStatus{Children: 1})
	return reconcile.Result{}, err
}

// reconciled counts reconciles on a channel, for a test that waits for
// a number of them without sleeping.
type reconciled chan struct{}

func (r reconciled) Reconciled(string, reconcile.Outcome, time.Duration) {
	select {
	case r <- struct{}{}:
	default: // nobody counting
	}
}
func (reconciled) Converged(string, time.Duration) {}
func (reconciled) WriteRejected(string)            {}
func (reconciled) KeyRefused(string)               {}

// familyStores are the stores the idle test runs over, each with the
// API-server layer: in process over memory, bolt and an embedded etcd
// member, and served over HTTP from bolt.
func familyStores(t *testing.T) map[string]func(t *testing.T) store.Store[family] {
	layer := func(t *testing.T, s store.Store[family]) store.Store[family] {
		l, err := apistore.New(s, familyKind{})
		require.NoError(t, err)
		return l
	}
	bolt := func(t *testing.T) store.Store[family] {
		s, err := boltstore.Open[family](filepath.Join(t.TempDir(), "idle.db"))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	return map[string]func(t *testing.T) store.Store[family]{
		"memory": func(t *testing.T) store.Store[family] {
			m := store.NewMemory[family]()
			t.Cleanup(func() { _ = m.Close() })
			return layer(t, m)
		},
		"bolt": func(t *testing.T) store.Store[family] { return layer(t, bolt(t)) },
		"etcd": func(t *testing.T) store.Store[family] {
			members, err := startEtcdCluster(t, 1)
			require.NoError(t, err)
			client, err := newEtcdClient(t, members)
			require.NoError(t, err)
			s, err := etcdstore.New[family](client, "idle/")
			require.NoError(t, err)
			return layer(t, s)
		},
		"bolt over HTTP": func(t *testing.T) store.Store[family] {
			return httpstoretest.ServeLayer[family](t, bolt(t), familyKind{}, httpstoretest.Options{}).Client
		},
	}
}

// TestAControllerEnsuringItsChildrenGoesIdleOnceConvergedOnEveryBackend:
// an owner whose reconcile ensures its child with store.CreateOrUpdate,
// woken by its children's changes (owners.Source), stops writing once
// every child is in place, on every backend: the store's revision settles
// within a few rounds of WaitForRevision, and reconciling every owner
// again writes nothing. Before writes that change nothing were skipped,
// each reconcile rewrote the child, whose event woke the owner again.
func TestAControllerEnsuringItsChildrenGoesIdleOnceConvergedOnEveryBackend(t *testing.T) {
	const owned = 3
	for name, open := range familyStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			s := open(t)
			for i := range owned {
				_, err := resource.PutSpec(ctx, s, fmt.Sprint("owners/o", i), familySpec{Size: i + 1})
				require.NoError(t, err)
			}
			done := make(reconciled, 1024)
			c, err := reconcile.New(s, reconcile.ReconcilerFunc[family](ensureChildren), reconcile.Options[family]{
				Name: "families", Prefix: "owners/", Metrics: done,
				Sources: []reconcile.Source{owners.Source(s, "children/", familyKind{})},
			})
			require.NoError(t, err)
			startFamilies(t, c)

			settled := false
			for range 20 {
				rev, err := s.Revision(ctx)
				require.NoError(t, err)
				require.NoError(t, c.WaitForRevision(ctx, rev))
				now, err := s.Revision(ctx)
				require.NoError(t, err)
				if now == rev {
					settled = true
					break
				}
			}
			require.True(t, settled, "the store kept changing: the controller writes at every reconcile")
			children, _, err := s.List(ctx, "children/")
			require.NoError(t, err)
			require.Len(t, children, owned)

			rev, err := s.Revision(ctx)
			require.NoError(t, err)
			for len(done) > 0 {
				<-done
			}
			c.EnqueueAll()
			for range owned {
				select {
				case <-done:
				case <-time.After(time.Minute): // a safety net, not a measure
					t.Fatal("the owners enqueued again were not reconciled")
				}
			}
			now, err := s.Revision(ctx)
			require.NoError(t, err)
			require.Equal(t, rev, now, "reconciling converged owners again wrote to the store")
		})
	}
}

// startFamilies runs c until the test ends.
func startFamilies(t *testing.T, c *reconcile.Controller[family]) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done, "the controller's Run")
	})
	require.NoError(t, c.WaitForSync(t.Context()))
}
