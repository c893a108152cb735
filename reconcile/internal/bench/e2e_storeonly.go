package bench

import (
	"context"
	"errors"
	"sync"

	"github.com/converge-go/converge/store"
)

// RunStoreOnly is the end-to-end baseline without a framework: workers
// goroutines each take every workers-th key, Get it from the store and run
// the shared reconciler body on it (one status Update per key). Its time is
// what the store operations of a run cost; a framework's time beyond it is
// the framework's overhead. It has no watch and no echo of its own writes,
// so Settled equals Converged.
func RunStoreOnly(s E2EStore, keys []string, workers int) (E2EResult, error) {
	t := newTracker(len(keys))
	ctx := context.Background()
	errs := make([]error, workers)
	mallocs := t.begin()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(keys); i += workers {
				var obj store.Object[*Pair]
				obj, errs[w] = s.Get(ctx, keys[i])
				if errs[w] == nil {
					errs[w] = t.reconcile(ctx, s, obj)
				}
				if errs[w] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	res := t.result(mallocs)
	res.Settled = res.Converged
	return res, errors.Join(errs...)
}
