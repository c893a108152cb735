package bench

import (
	"context"
	"fmt"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/converge-go/converge/store"
)

// RunCtrlRuntime runs the end-to-end workload on controller-runtime's
// controller without a manager: controller.NewTypedUnmanaged[string] with
// a reconcile.TypedFunc[string] running the shared reconciler body over
// the cached object, workers MaxConcurrentReconciles, and every other
// option at its default (so the queue is controller-runtime's priority
// queue with its default rate limiter). Its one source is a
// storeSource: the same reflector and map cache as the client-go loop
// (list, then watch; resume a lagging watch from the cache's revision,
// re-list and add every key on a compacted history) adding keys to the
// controller's queue. A key whose object is not in the cache is done; a
// body error is returned to the controller, which requeues the key with
// its rate limiter.
func RunCtrlRuntime(s E2EStore, keys []string, workers int) (E2EResult, error) {
	cs := &countingStore{E2EStore: s}
	t := newTracker(len(keys))
	cache := &mapCache{objects: make(map[string]store.Object[*Pair])}
	skip := true
	c, err := controller.NewTypedUnmanaged("e2e", controller.TypedOptions[string]{
		// Every run makes a new controller of the same name; the name
		// only labels metrics.
		SkipNameValidation:      &skip,
		MaxConcurrentReconciles: workers,
		Reconciler: reconcile.TypedFunc[string](func(ctx context.Context, key string) (reconcile.Result, error) {
			obj, ok := cache.get(key)
			if !ok {
				return reconcile.Result{}, nil
			}
			return reconcile.Result{}, t.reconcile(ctx, cs, obj)
		}),
	})
	if err != nil {
		return E2EResult{}, err
	}
	src := &storeSource{s: cs, cache: cache, done: make(chan struct{})}
	if err := c.Watch(src); err != nil {
		return E2EResult{}, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mallocs := t.begin()
	runErr := make(chan error, 1)
	go func() { runErr <- c.Start(ctx) }()
	select {
	case <-t.settled:
	case err := <-runErr:
		return E2EResult{}, fmt.Errorf("controller stopped before converging: %v", err)
	}
	res := t.result(mallocs)

	cancel()
	err = <-runErr
	src.wait()
	res.Lists, res.Watches = cs.lists.Load(), cs.watches.Load()
	return res, err
}

// storeSource is a controller-runtime source over an E2EStore: Start
// launches the client-go loop's reflector into cache, feeding the
// controller's queue, and returns at once, as a source's Start must.
type storeSource struct {
	s     E2EStore
	cache *mapCache
	done  chan struct{} // closed when the reflector has returned
}

// Start implements source.TypedSource[string]. The reflector runs until
// ctx ends.
func (src *storeSource) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[string]) error {
	go func() {
		defer close(src.done)
		runReflector(ctx, src.s, src.cache, q)
	}()
	return nil
}

// wait returns once the reflector started by Start has returned.
func (src *storeSource) wait() { <-src.done }
