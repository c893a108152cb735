package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/converge-go/converge/reconcile"
)

// RunConverge runs the end-to-end workload on converge:
// reconcile.New(s, reconciler, reconcile.Options{Name, Workers}) and Run,
// with every other option at its default. The reconciler is the shared
// body over the cached object it is handed. After the run has settled it
// checks with WaitForRevision that the controller has nothing pending up to
// the store's revision, then stops the controller.
func RunConverge(s E2EStore, keys []string, workers int) (E2EResult, error) {
	return runConverge(s, keys, workers, false, convergeHooks{})
}

// RunConvergeOwnWrites is RunConverge with the status written the way a
// converge reconciler writes it: through Request.Store. The controller then
// knows each status write's echo for its own and does not reconcile it
// again (the other implementations cannot tell an echo from someone
// else's change, and reconcile it as a no-op). A run settles when every
// status is written and WaitForRevision says the controller has seen
// every change up to the store's revision, echoes included: the point
// where the other implementations' loops have reconciled their echoes.
func RunConvergeOwnWrites(s E2EStore, keys []string, workers int) (E2EResult, error) {
	return runConverge(s, keys, workers, true, convergeHooks{})
}

// convergeHooks let a variant of the converge run (e2e_checkpoint.go) add
// to the controller's options and look at the controller once the run has
// settled, before it is stopped. Either may be nil.
type convergeHooks struct {
	options func(*reconcile.Options[*Pair])
	settled func(*reconcile.Controller[*Pair])
}

func runConverge(s E2EStore, keys []string, workers int, ownWrites bool, hooks convergeHooks) (E2EResult, error) {
	given, cs := countingAsIs(s)
	t := newTracker(len(keys))
	rec := reconcile.ReconcilerFunc[*Pair](func(ctx context.Context, req reconcile.Request[*Pair]) (reconcile.Result, error) {
		if req.Deleted {
			return reconcile.Result{}, nil
		}
		w := given
		if ownWrites {
			w = req.Store
		}
		return reconcile.Result{}, t.reconcile(ctx, w, req.Object)
	})
	opts := reconcile.Options[*Pair]{Name: "e2e", Workers: workers}
	if hooks.options != nil {
		hooks.options(&opts)
	}
	c, err := reconcile.New[*Pair](given, rec, opts)
	if err != nil {
		return E2EResult{}, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mallocs := t.begin()
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(ctx) }()
	end := t.settled // the body saw every object's echo
	if ownWrites {
		end = t.allWritten // no echo comes back to the body
	}
	select {
	case <-end:
	case err := <-runErr:
		return E2EResult{}, fmt.Errorf("controller stopped before converging: %v", err)
	}
	var res E2EResult
	if !ownWrites {
		res = t.result(mallocs)
	}
	rev, err := s.Revision(ctx)
	if err == nil {
		err = c.WaitForRevision(ctx, rev)
	}
	if ownWrites {
		t.settledAt.Store(int64(time.Since(t.start)))
		res = t.result(mallocs)
	}
	if hooks.settled != nil {
		hooks.settled(c)
	}
	cancel()
	if runErr := <-runErr; err == nil {
		err = runErr
	}
	res.Lists, res.Watches = cs.lists.Load(), cs.watches.Load()
	return res, err
}
