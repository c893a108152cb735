package reconcile

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"runtime/debug"
	"time"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile/tracing"
)

// conflictRetry is how long a key whose status write conflicted waits for
// the newer object to reach the cache before it is reconciled anyway; the
// watch event that brings the newer object wakes it sooner.
const conflictRetry = time.Second

// SetWorkers changes how many workers reconcile at once (at least 1). Extra
// workers stop after their current reconcile. Before Run it sets the count
// Run starts with.
func (c *Controller[T]) SetWorkers(n int) {
	c.workersMu.Lock()
	defer c.workersMu.Unlock()
	c.wantWorkers = max(n, 1)
	if c.current != nil {
		c.scaleLocked()
	}
}

// Workers returns how many workers the controller runs at once (or will
// run, before Run): Options.Workers, or the count of the latest SetWorkers.
func (c *Controller[T]) workers() int {
	c.workersMu.Lock()
	defer c.workersMu.Unlock()
	return c.wantWorkers
}

// scaleLocked starts or stops the current run's workers to match
// wantWorkers. workersMu is held and a run is current.
func (c *Controller[T]) scaleLocked() {
	r := c.current
	for len(r.workers) < c.wantWorkers {
		ctx, cancel := context.WithCancel(r.ctx)
		r.workers = append(r.workers, cancel)
		r.wg.Go(func() { c.work(ctx, r) })
	}
	for len(r.workers) > c.wantWorkers {
		n := len(r.workers) - 1
		r.workers[n]()
		r.workers = r.workers[:n]
	}
}

// work takes keys until ctx ends or the queue shuts down.
func (c *Controller[T]) work(ctx context.Context, r *run[T]) {
	if c.batch != nil {
		c.workBatches(ctx, r)
		return
	}
	var ctxs contextChunk
	for {
		get, release, err := c.handOuts(ctx)
		if err != nil {
			return
		}
		err = c.takeKeys(get, r, &ctxs)
		release()
		if c.circ == nil || ctx.Err() != nil || errors.Is(err, queue.ErrShutDown) {
			return
		}
	}
}

// takeKeys reconciles the keys it is handed until get ends (the worker
// stops, or the circuit opens) or the queue shuts down, and returns Get's
// error. A key handed out as the circuit opens is given back.
func (c *Controller[T]) takeKeys(get context.Context, r *run[T], ctxs *contextChunk) error {
	var one []queue.Handout[string]
	for {
		var err error
		one, err = r.q.GetBatch(get, 1, one[:0])
		if err != nil {
			return err
		}
		h := one[0]
		if c.circ.holds() {
			giveBack(r.q, h.Key, trigger(h.Tags))
			return nil
		}
		c.process(r, ctxs, h)
	}
}

// process is a key's turn alone: handed out, reconciled with a context
// of its own, settled and done.
func (c *Controller[T]) process(r *run[T], ctxs *contextChunk, h queue.Handout[string]) {
	cc := callContext{ctx: r.reconCtx}
	t := c.beginTurn(r, h, &cc)
	if t.ready {
		ctx := cc.begin(ctxs.next(), t.info(), c.opts.Timeout)
		if c.opts.Tracer != nil {
			ctx = t.traceBegin(ctx)
		}
		t.log, t.start = ctx, time.Now()
		t.res, t.err = c.call(ctx, t.req)
		t.elapsed = time.Since(t.start)
		t.settle()
		if t.span != nil {
			t.traceEnd()
		}
	}
	cc.end()
	t.done()
}

// begun is what request knows of a hand-out besides its Request: the
// ledger's store generation, and whether the key must wait for the store.
type begun struct {
	stores uint32
	await  bool
	hint   uint32 // the queue's hint of the key's record (ledger.hinted)
}

// request builds the Request for key from the cache (a deleted key's
// tombstone, read under the same lock as the cache, so a Deleted request
// for a key the cache held always carries its last value), and marks the
// key's pending changes up to the object's revision as in flight. A key
// neither the cache nor its checkpoint holds, while the controller runs
// from its checkpoint, is no deletion the store reported: it awaits the
// store (AwaitingStore; recall.go).
func (c *Controller[T]) request(h queue.Handout[string]) (Request[T], begun) {
	key := h.Key
	req := Request[T]{Key: key, Retries: c.opts.RateLimiter.NumRequeues(key)}
	// The cache must be read under c.mu, so that observe cannot retire an
	// own write between the cache's read and the ledger's. It is read
	// first without it, so that c.mu is not held through the read (a
	// miss in a large map) or behind a batch the cache is applying, and
	// read again under c.mu (lock order: c.mu, then the cache's) only if
	// the cache changed meanwhile: else it holds what was read.
	obj, present, tombstone, edits := c.cache.LookupCounted(key)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cache.Edits() != edits {
		obj, present, tombstone = c.cache.Lookup(key)
	}
	// Never older than the controller's own last write of the key.
	req.Object, req.Deleted = c.led.reconcileBegun(key, h.Hint, obj, present)
	req.Deleting = !req.Deleted && c.markedDeleting(req.Object)
	b := begun{stores: c.led.stores, hint: h.Hint}
	b.await = req.Deleted && !tombstone && req.Object.Revision == 0 && c.cache.Restored()
	return req, b
}

// call runs the reconciler, turning a panic into a *PanicError.
func (c *Controller[T]) call(ctx context.Context, req Request[T]) (res Result, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return c.rec.Reconcile(ctx, req)
}

// settle decides what happens to a reconciled key next, from how its
// reconcile ended, and records it.
func (t *turn[T]) settle() {
	c, q, key := t.c, t.q, t.req.Key
	outcome := classify(t.res, t.err)
	if outcome == DependencyDown && !c.circ.blame(t.err) {
		outcome = Failure // not one of Options.Dependencies: an error like any other
	}
	switch outcome {
	case Success:
		q.Forget(key)
	case Requeue:
		// Not done yet, and not failing: back off on the key's limiter
		// without forgetting it.
		q.AddWith(key, queue.AddOptions{RateLimited: true, Tags: trigRequeue})
	case RequeueAfter:
		q.Forget(key)
		q.AddWith(key, queue.AddOptions{After: t.res.RequeueAfter, Tags: trigRequeue})
	case TerminalFailure:
		q.Forget(key)
		c.logFailure(t.log, slog.LevelError, "reconcile failed terminally; not retrying", t.err)
	case Conflict:
		c.retryConflict(q, t.req)
		c.logFailure(t.log, slog.LevelDebug, "write conflicted; reconciling the newer object", t.err)
	case AwaitingStore:
		q.Forget(key) // it waits for the store, not for a backoff (see finish)
		c.logFailure(t.log, slog.LevelInfo, "key not in the checkpoint the controller runs from; waiting for the store", t.err, "key", key)
	default: // Failure, Panicked, DependencyDown
		t.retry(outcome)
	}
	latency, converged := c.finish(q, ending{
		key: key, hint: t.b.hint, revision: t.req.Object.Revision, stores: t.b.stores, deleted: t.req.Deleted,
		outcome: outcome, why: t.why, err: t.err, start: t.start, elapsed: t.elapsed,
	})
	if t.span != nil {
		t.ended = tracing.ReconcileEnd{Outcome: string(outcome), Failed: outcome.Failed(), Err: t.err, Converged: converged, Latency: latency}
	}
	if c.opts.Metrics != nil && outcome != AwaitingStore { // no reconcile was made
		c.opts.Metrics.Reconciled(c.opts.Name, outcome, t.elapsed)
		if converged {
			c.opts.Metrics.Converged(c.opts.Name, latency)
		}
	}
}

// retry queues a key whose reconcile failed: after its backoff, or, while
// a dependency is down (the circuit holds the hand-outs), at once and
// without counting a retry, to wait in the queue until the dependency is
// up (see circuit).
func (t *turn[T]) retry(outcome Outcome) {
	c, q, key := t.c, t.q, t.req.Key
	if c.circ.holds() {
		q.AddWith(key, queue.AddOptions{Tags: trigRetry})
		c.logFailure(t.log, slog.LevelWarn, "reconcile failed while a dependency is down; holding the key until it is up", t.err)
		return
	}
	delay := c.opts.RateLimiter.When(key)
	if t.res.RequeueAfter > 0 {
		delay = min(delay, t.res.RequeueAfter)
	}
	q.AddWith(key, queue.AddOptions{After: delay, Tags: trigRetry})
	level := slog.LevelWarn
	if outcome == Panicked {
		level = slog.LevelError
	}
	c.logFailure(t.log, level, "reconcile failed; backing off", t.err, "retry_in", delay)
}

// retryConflict reconciles a key whose write conflicted again at once if
// the cache already holds a newer object than the reconcile was given;
// otherwise that object's arrival will, even if a predicate filters it
// (the mark is set before the cache is read, so an arrival in between is
// not missed). A cache older than the object given (the controller's own
// write, which the cache has yet to hold) is no reason to retry: the retry
// would be given the same object, and conflict again, for as long as the
// cache lags.
func (c *Controller[T]) retryConflict(q *queue.Queue[string], req Request[T]) {
	c.mu.Lock()
	c.led.writeConflicted(req.Key)
	c.mu.Unlock()
	if cur, present, _ := c.cache.Lookup(req.Key); present && cur.Revision > req.Object.Revision || !present && !req.Deleted {
		c.mu.Lock()
		c.led.conflictResolved(req.Key)
		c.mu.Unlock()
		q.AddWith(req.Key, queue.AddOptions{Tags: trigRetry})
		return
	}
	q.AddWith(req.Key, queue.AddOptions{After: conflictRetry, Tags: trigRetry})
}

// finish records a reconcile's end in the ledger, under one lock with
// the queue's answer whether the key will be handed out again: a deletion
// dealt with lets its tombstone go unless it will (that request needs it).
// It returns the convergence latency of the changes a successful reconcile
// covered (ok false if it covered none).
func (c *Controller[T]) finish(q *queue.Queue[string], e ending) (latency time.Duration, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	res := c.led.reconcileEnded(e)
	if res.gone && !q.View().Queued(e.key) {
		c.cache.ForgetTombstone(e.key, e.revision)
	}
	if e.outcome == AwaitingStore && !c.cache.Restored() {
		// The store came back since the hand-out, and storeBack, which
		// runs under c.mu too, has queued the waiting keys already.
		q.AddWith(e.key, queue.AddOptions{Tags: trigStoreBack})
	}
	return res.latency, res.ok
}

// disown forgets a key this replica does not own: its owner reconciles it,
// so nothing here waits for it (WaitForRevision), retries it or keeps its
// tombstone.
func (c *Controller[T]) disown(key string, q *queue.Queue[string]) {
	q.Forget(key)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.led.dropped(key)
	if !q.View().Queued(key) {
		c.cache.ForgetTombstone(key, math.MaxInt64)
	}
}
