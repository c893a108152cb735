package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/converge-go/converge/reconcile"
)

// RunConvergeOwnWrites is RunConverge with the status written the way a
// converge reconciler writes it: through Request.Store. The controller then
// knows each status write's echo for its own and does not reconcile it
// again (the other implementations cannot tell an echo from someone
// else's change, and reconcile it as a no-op). A run settles when every
// status is written and WaitForRevision says the controller has seen
// every change up to the store's revision, echoes included: the point
// where the other implementations' loops have reconciled their echoes.
func RunConvergeOwnWrites(s E2EStore, keys []string, workers int) (E2EResult, error) {
	cs := &countingStore{E2EStore: s}
	t := newTracker(len(keys))
	rec := reconcile.ReconcilerFunc[*Pair](func(ctx context.Context, req reconcile.Request[*Pair]) (reconcile.Result, error) {
		if req.Deleted {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, t.reconcile(ctx, req.Store, req.Object)
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
	case <-t.allWritten:
	case err := <-runErr:
		return E2EResult{}, fmt.Errorf("controller stopped before converging: %v", err)
	}
	rev, err := s.Revision(ctx)
	if err == nil {
		err = c.WaitForRevision(ctx, rev)
	}
	t.settledAt.Store(int64(time.Since(t.start)))
	res := t.result(mallocs)
	cancel()
	if runErr := <-runErr; err == nil {
		err = runErr
	}
	res.Lists, res.Watches = cs.lists.Load(), cs.watches.Load()
	return res, err
}
