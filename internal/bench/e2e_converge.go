package bench

import (
	"context"
	"fmt"

	"github.com/converge-go/converge/reconcile"
)

// RunConverge runs the end-to-end workload on converge:
// reconcile.New(s, reconciler, reconcile.Options{Name, Workers}) and Run,
// with every other option at its default. The reconciler is the shared
// body over the cached object it is handed. After the run has settled it
// checks with WaitForRevision that the controller has nothing pending up to
// the store's revision, then stops the controller.
func RunConverge(s E2EStore, keys []string, workers int) (E2EResult, error) {
	cs := &countingStore{E2EStore: s}
	t := newTracker(len(keys))
	rec := reconcile.ReconcilerFunc[*Pair](func(ctx context.Context, req reconcile.Request[*Pair]) (reconcile.Result, error) {
		if req.Deleted {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, t.reconcile(ctx, cs, req.Object)
	})
	c, err := reconcile.New[*Pair](cs, rec, reconcile.Options[*Pair]{Name: "e2e", Workers: workers})
	if err != nil {
		return E2EResult{}, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mallocs := t.begin()
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(ctx) }()
	select {
	case <-t.settled:
	case err := <-runErr:
		return E2EResult{}, fmt.Errorf("controller stopped before converging: %v", err)
	}
	res := t.result(mallocs)

	rev, err := s.Revision(ctx)
	if err == nil {
		err = c.WaitForRevision(ctx, rev)
	}
	cancel()
	if runErr := <-runErr; err == nil {
		err = runErr
	}
	res.Lists, res.Watches = cs.lists.Load(), cs.watches.Load()
	return res, err
}
