package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/examples/internal/pods"
	"github.com/converge-go/converge/examples/replicaset/controller"
	"github.com/converge-go/converge/lock"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/reconcile/reconciletest"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/faultstore"
)

// TestTheLeaderGoesIdleOnceConverged: the replicated controller as a
// replica runs it (the replica set controller under a lock.Elector, its
// writes fenced by the term, through the API-server layer, the lease in
// the same keyspace), once its replica sets run their pods, reconciles
// and writes nothing (reconciletest's CheckIdle): its writes that would
// change nothing carry the term's guard without being stored.
func TestTheLeaderGoesIdleOnceConverged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := reconciletest.NewEnv(t)
		raw := store.NewMemory[[]byte]()
		t.Cleanup(func() { _ = raw.Close() })
		counted := reconciletest.Wrap(env, store.Store[*controller.ReplicaSet](store.NewView[*controller.ReplicaSet](raw, nil)), faultstore.Options{})
		objects, err := apistore.New(counted, resource.Kind[controller.Spec, controller.Status]{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if _, err := resource.PutSpec(t.Context(), objects, fmt.Sprint(rsPrefix, "rs", i), controller.Spec{Replicas: i + 1}); err != nil {
				t.Fatal(err)
			}
		}
		lease, err := lock.NewLease(store.NewView[lock.Record](raw, nil), leaseKey, lock.LeaseOptions{Holder: "a", TTL: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		elector, err := lock.NewElector(lease, lock.ElectorOptions{})
		if err != nil {
			t.Fatal(err)
		}
		world := &idlePods{}
		ctrl, err := controller.New(objects, controller.Config{Pods: world, Prefix: rsPrefix, Metrics: env.Metrics()})
		if err != nil {
			t.Fatal(err)
		}
		env.Start(elected{ctrl, elector})
		env.CheckIdle(time.Second, world.snapshot)
		if got := world.snapshot(); !slices.Equal(got.([]int), []int{1, 2, 3}) {
			t.Fatalf("pods per replica set: %v, want [1 2 3]", got)
		}
	})
}

// elected runs a controller while elector leads, as a replica's manager
// does.
type elected struct {
	*reconcile.Controller[*controller.ReplicaSet]
	elector *lock.Elector
}

func (e elected) Run(ctx context.Context) error { return e.elector.Run(ctx, e.Controller.Run) }

// idlePods is a world of pretend pods that never end by themselves.
type idlePods struct {
	mu   sync.Mutex
	pods []pods.Pod
	next int
}

func (w *idlePods) Running(owner string) []pods.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []pods.Pod
	for _, p := range w.pods {
		if p.Owner == owner {
			out = append(out, p)
		}
	}
	return out
}

func (w *idlePods) Start(_ context.Context, owner string, _ []string) (pods.Pod, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.next++
	p := pods.Pod{Owner: owner, PID: 1000 + w.next, Started: time.Unix(int64(w.next), 0)}
	w.pods = append(w.pods, p)
	return p, nil
}

func (w *idlePods) Stop(_ context.Context, pod pods.Pod) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pods = slices.DeleteFunc(w.pods, func(p pods.Pod) bool { return p.PID == pod.PID })
	return nil
}

// snapshot returns how many pods each replica set runs, in key order.
func (w *idlePods) snapshot() any {
	var n []int
	for i := range 3 {
		n = append(n, len(w.Running(fmt.Sprint(rsPrefix, "rs", i))))
	}
	return n
}
