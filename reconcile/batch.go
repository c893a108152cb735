package reconcile

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/converge-go/converge/queue"
)

// BatchReconciler is a Reconciler that can also converge several keys in
// one call, for systems whose API is cheaper in batches (routes, BPF maps,
// DNS zones, SQL). With Options.BatchSize above 1, each worker hands it up
// to that many ready keys at once.
//
// Each key of a batch is handed out, retried and recorded as if it had
// been reconciled alone: no other worker has it while the batch runs; its
// result decides its own backoff, requeue and outcome (one key failing
// does not fail the others); its Request.Store carries its own fencing
// guards; its pending changes, WaitForRevision and introspection follow its
// own result. What is shared: one context (Options.Timeout bounds the
// whole call, and under a Sharder it ends when the ownership of any of the
// batch's keys is lost, so all of them are retried), one start time and
// duration for the metrics, and a panic, which fails every key of the
// batch.
type BatchReconciler[T any] interface {
	Reconciler[T]
	// ReconcileBatch converges reqs (at least one, at most BatchSize, no
	// key twice) and returns one result per request, in the same order.
	// A key without its result (fewer results than requests) fails with
	// an error matching ErrInvalid and is retried.
	ReconcileBatch(ctx context.Context, reqs []Request[T]) []BatchResult
}

// BatchResult is how the reconcile of one key of a batch ended, with the
// meaning Reconcile's results have.
type BatchResult struct {
	Result Result
	Err    error
}

// workBatches is a worker's loop with Options.BatchSize above 1.
func (c *Controller[T]) workBatches(ctx context.Context, r *run[T]) {
	var batch []queue.Handout[string]
	for {
		get, release, err := c.handOuts(ctx)
		if err != nil {
			return
		}
		batch, err = c.takeBatches(get, r, batch)
		release()
		if c.circ == nil || ctx.Err() != nil || errors.Is(err, queue.ErrShutDown) {
			return
		}
	}
}

// takeBatches reconciles the batches it is handed until get ends or the
// queue shuts down, as takeKeys does keys, and returns its buffer and
// GetBatch's error.
func (c *Controller[T]) takeBatches(get context.Context, r *run[T], batch []queue.Handout[string]) ([]queue.Handout[string], error) {
	for {
		var err error
		batch, err = r.q.GetBatch(get, c.opts.BatchSize, batch[:0])
		if err != nil {
			return batch, err
		}
		if c.circ.holds() {
			for _, h := range batch {
				giveBack(r.q, h.Key, trigger(h.Tags))
			}
			return batch, nil
		}
		c.processBatch(r, batch)
	}
}

// processBatch is the turns of one batch: each key handed out as if
// alone, the ready ones reconciled in one call with one context, then
// each settled and done.
func (c *Controller[T]) processBatch(r *run[T], batch []queue.Handout[string]) {
	cc := callContext{ctx: r.reconCtx}
	cc.cancelable() // a batch's context ends when its call does
	turns := make([]turn[T], 0, len(batch))
	reqs := make([]Request[T], 0, len(batch))
	for _, h := range batch {
		t := c.beginTurn(r, h, &cc)
		if t.ready {
			reqs = append(reqs, t.req)
		}
		turns = append(turns, t)
	}
	if len(reqs) > 0 {
		c.reconcileBatch(&cc, turns, reqs)
	}
	cc.end()
	for i := range turns {
		turns[i].done()
	}
}

// reconcileBatch reconciles the ready turns of a batch, whose requests
// are reqs, in one call, and settles each with its own result.
func (c *Controller[T]) reconcileBatch(cc *callContext, turns []turn[T], reqs []Request[T]) {
	ctx := cc.begin(new(reconcileContext), info{
		ctl: &c.about, batch: int32(len(reqs)), id: c.ids.Add(1),
	}, c.opts.Timeout)
	start := time.Now()
	results := c.callBatch(ctx, reqs)
	elapsed := time.Since(start)
	i := 0
	for j := range turns {
		t := &turns[j]
		if !t.ready {
			continue
		}
		if i < len(results) {
			t.res, t.err = results[i].Result, results[i].Err
		} else {
			t.err = fmt.Errorf("%w: the batch returned no result for the key (%d results for %d requests)", ErrInvalid, len(results), len(reqs))
		}
		i++
		t.log, t.start, t.elapsed = cc.ctx, start, elapsed
		if t.err != nil { // only failures log, with the key's attributes
			t.log = &reconcileContext{Context: cc.ctx, info: t.info()}
		}
		t.settle()
	}
}

// callBatch runs the batch reconciler, turning a panic into a *PanicError
// for every key.
func (c *Controller[T]) callBatch(ctx context.Context, reqs []Request[T]) (results []BatchResult) {
	defer func() {
		if v := recover(); v != nil {
			err := &PanicError{Value: v, Stack: debug.Stack()}
			results = make([]BatchResult, len(reqs))
			for i := range results {
				results[i].Err = err
			}
		}
	}()
	return c.batch.ReconcileBatch(ctx, reqs)
}
