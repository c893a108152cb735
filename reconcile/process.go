package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime/debug"
	"time"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/store"
)

// conflictRetry is how long a key whose status write conflicted waits for
// the newer object to reach the cache before it is reconciled anyway; the
// watch event that brings the newer object wakes it sooner.
const conflictRetry = time.Second

// process reconciles one key and decides what happens to it next.
func (c *Controller[T]) process(ctx context.Context, q *queue.Queue[string], w *writer[T], ctxs *contextChunk, key string, why trigger) {
	var claim Claim
	if c.opts.Shard != nil {
		var owned bool
		if claim, owned = c.opts.Shard.Claim(key); !owned {
			c.disown(key, q)
			return
		}
	}
	req := c.request(key)
	req.Store = w
	if claim.Owned != nil {
		req.Store = guardedWriter[T]{writer: w, guards: claim.Guards}
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(claim.Owned, cancel)
		defer stop()
	}
	rc := ctxs.next()
	*rc = reconcileContext{Context: ctx, info: info{
		controller: c.opts.Name, key: key, revision: req.Object.Revision,
		attempt: req.Attempt, id: c.ids.Add(1), base: c.opts.Logger,
	}}
	ctx = rc
	if c.opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opts.Timeout)
		defer cancel()
	}
	start := time.Now()
	res, err := c.call(ctx, req)
	c.settle(ctx, q, req, why, res, err, start, time.Since(start))
}

// settle decides what happens to a reconciled key next, from how its
// reconcile (started at start, elapsed long) ended, and records it.
func (c *Controller[T]) settle(ctx context.Context, q *queue.Queue[string], req Request[T], why trigger, res Result, err error, start time.Time, elapsed time.Duration) {
	key := req.Key
	outcome := classify(res, err)
	switch outcome {
	case Success:
		q.Forget(key)
	case Requeue:
		// Not done yet, and not failing: back off on the key's limiter
		// without forgetting it.
		q.AddWith(key, queue.AddOptions{RateLimited: true, Tags: trigRequeue})
	case RequeueAfter:
		q.Forget(key)
		q.AddWith(key, queue.AddOptions{After: res.RequeueAfter, Tags: trigRequeue})
	case TerminalFailure:
		q.Forget(key)
		c.logFailure(ctx, slog.LevelError, "reconcile failed terminally; not retrying", err)
	case Conflict:
		// Reconcile again at once if the cache already holds a newer
		// object; otherwise its arrival will, even if a predicate
		// filters it (conflicted is set before the cache is read, so an
		// arrival in between is not missed).
		c.mu.Lock()
		setKey(c.conflicted, &c.conflictedPeak, key, struct{}{})
		c.mu.Unlock()
		if cur, present, _ := c.cache.lookup(key); present && cur.Revision != req.Object.Revision || !present && !req.Deleted {
			c.mu.Lock()
			forgetKey(&c.conflicted, &c.conflictedPeak, key)
			c.mu.Unlock()
			q.AddWith(key, queue.AddOptions{Tags: trigRetry})
		} else {
			q.AddWith(key, queue.AddOptions{After: conflictRetry, Tags: trigRetry})
		}
		c.logFailure(ctx, slog.LevelDebug, "write conflicted; reconciling the newer object", err)
	default: // Failure, Panicked
		delay := c.opts.RateLimiter.When(key)
		if res.RequeueAfter > 0 {
			delay = min(delay, res.RequeueAfter)
		}
		q.AddWith(key, queue.AddOptions{After: delay, Tags: trigRetry})
		level := slog.LevelWarn
		if outcome == Panicked {
			level = slog.LevelError
		}
		c.logFailure(ctx, level, "reconcile failed; backing off", err, "retry_in", delay)
	}
	latency, converged := c.finish(req, outcome, why, err, start, elapsed, q)
	if c.opts.Metrics != nil {
		c.opts.Metrics.Reconciled(c.opts.Name, outcome, elapsed)
		if converged {
			c.opts.Metrics.Converged(c.opts.Name, latency)
		}
	}
}

// disown forgets a key this replica does not own: its owner reconciles it,
// so nothing here waits for it (WaitForRevision), retries it or keeps its
// tombstone.
func (c *Controller[T]) disown(key string, q *queue.Queue[string]) {
	q.Forget(key)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.pending[key]; ok {
		c.forgetPendingLocked(key)
		if c.progress != nil {
			close(c.progress)
			c.progress = nil
		}
	}
	forgetKey(&c.conflicted, &c.conflictedPeak, key)
	c.forgetLastLocked(key)
	forgetKey(&c.failing, &c.failingPeak, key)
	if !q.Queued(key) {
		c.cache.forgetTombstone(key, math.MaxInt64)
	}
}

// request builds the Request for key from the cache (a deleted key's
// tombstone, read under the same lock as the cache, so a Deleted request
// for a key the cache held always carries its last value), and marks the
// key's pending changes up to the object's revision as in flight.
func (c *Controller[T]) request(key string) Request[T] {
	req := Request[T]{Key: key, Attempt: c.opts.RateLimiter.NumRequeues(key)}
	c.mu.Lock()
	defer c.mu.Unlock()
	// Read the cache under c.mu (lock order: c.mu, then the cache's), so
	// that observe cannot retire an own write between the two reads.
	obj, present, _ := c.cache.lookup(key)
	// Never older than the controller's own last write of the key.
	req.Object, req.Deleted, _ = c.ownObjectLocked(key, obj, present)
	obj = req.Object
	if p, ok := c.pending[key]; ok {
		p.inflight, p.covering, p.next, p.touched = true, obj.Revision, 0, false
		c.pending[key] = p
	}
	return req
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

// classify names how a reconcile that returned res and err ended.
func classify(res Result, err error) Outcome {
	if err == nil {
		switch {
		case res.Requeue:
			return Requeue
		case res.RequeueAfter > 0:
			return RequeueAfter
		}
		return Success
	}
	var pe *PanicError
	switch {
	case errors.As(err, &pe):
		return Panicked
	case errors.Is(err, ErrTerminal):
		return TerminalFailure
	case errors.Is(err, store.ErrConflict):
		return Conflict
	}
	return Failure
}

// finish records a reconcile's outcome, under one lock: a success or a
// terminal failure covers the key's pending changes up to the revision it
// was given (changes that arrived meanwhile stay pending) and, for a
// deletion, ends the key's records (its tombstone, its history and its
// conflict mark); every other outcome is kept for introspection. A
// deletion's tombstone stays while the key will be handed out again
// (it changed again, or was woken, during the reconcile), so that
// the next request carries it too; that request's finish lets it go.
//
// Lock order: c.mu before the cache's lock, never the reverse (the cache
// calls observe without its lock held).
//
// It returns the convergence latency of the changes a successful reconcile
// covered: from when observe saw the oldest of them to when the reconcile
// returned (ok false if it covered none).
func (c *Controller[T]) finish(req Request[T], outcome Outcome, why trigger, err error, start time.Time, elapsed time.Duration, q *queue.Queue[string]) (latency time.Duration, ok bool) {
	covered := outcome.Settled()
	converged := covered && outcome != TerminalFailure
	now := start.Add(elapsed) // when the reconcile returned, without another clock read
	c.mu.Lock()
	defer c.mu.Unlock()
	var since monoTime // when the oldest change this reconcile covered was seen
	sinceOK := false   // since is set: the reconcile covered a pending change
	touched := false
	// The cache may hold the object this reconcile saw before observe has
	// heard of its change: then it is covered ahead, and its arrival must
	// neither wake the key nor leave it pending.
	ahead := covered && req.Object.Revision > 0 && !c.observedLocked(req.Key, req.Object.Revision)
	if ahead {
		setKey(c.coveredAhead, &c.coveredAheadPeak, req.Key, max(c.coveredAhead[req.Key], req.Object.Revision))
	}
	// Whether the key keeps a record of its last reconcile after this one
	// (a pending change left behind says so: pendingChange.reconciled).
	hasLast := !covered || !req.Deleted
	p, isPending := c.pending[req.Key]
	// A pending change knows whether the key has a record: the record
	// is read only if it may exist.
	hadLast := !isPending || p.reconciled
	if isPending && !p.inflight && covered && p.latest <= req.Object.Revision {
		// Recorded after this reconcile started, for a change it saw.
		since, sinceOK = p.since, true
		c.forgetPendingLocked(req.Key)
		if c.progress != nil {
			close(c.progress)
			c.progress = nil
		}
	} else if isPending && p.inflight {
		touched = p.touched
		switch {
		case !covered:
			p.inflight, p.touched, p.reconciled = false, false, hasLast
			c.pending[req.Key] = p
		case p.latest <= p.covering:
			since, sinceOK = p.since, true
			c.forgetPendingLocked(req.Key)
		default:
			since, sinceOK = p.since, true
			if p.next == 0 {
				p.next, p.nextSince = p.latest, c.mono(now)
			}
			c.pending[req.Key] = pendingChange{first: p.next, latest: p.latest, since: p.nextSince, reconciled: hasLast}
		}
		if covered && c.progress != nil {
			close(c.progress)
			c.progress = nil
		}
	} else if isPending && p.reconciled != hasLast {
		// Changes recorded since this reconcile started stay pending.
		p.reconciled = hasLast
		c.pending[req.Key] = p
	}
	if covered {
		forgetKey(&c.conflicted, &c.conflictedPeak, req.Key)
	}
	if converged && sinceOK {
		latency, ok = time.Duration(c.mono(now)-since), true
	}
	if covered {
		forgetKey(&c.failing, &c.failingPeak, req.Key)
	}
	if covered && req.Deleted {
		if hadLast {
			c.forgetLastLocked(req.Key) // deleted and dealt with: forget it
		}
		if !touched && !ahead && !q.Queued(req.Key) {
			c.cache.forgetTombstone(req.Key, req.Object.Revision)
		}
		return latency, ok
	}
	var prev lastReconcile
	if hadLast {
		prev = c.last[req.Key]
	}
	r := lastReconcile{code: codeOf(outcome), at: wallOf(start), duration: elapsed, revision: req.Object.Revision, triggers: why,
		success: prev.success, failingSince: prev.failingSince, converged: prev.converged}
	switch {
	case converged:
		r.success, r.failingSince = wallOf(start), 0
	case outcome.Failed() && r.failingSince == 0:
		r.failingSince = wallOf(now)
	}
	if outcome.Failed() {
		// A terminal failure is not retried, but its key is out of date
		// until a change reconciles it: it fails, for the stale alarm.
		setKey(c.failing, &c.failingPeak, req.Key, r.failingSince.time())
	}
	if ok {
		r.converged = latency
	}
	switch {
	case err != nil:
		r.failed = true
		setKey(c.lastErr, &c.lastErrPeak, req.Key, err.Error())
	case prev.failed:
		c.forgetLastErrLocked(req.Key)
	}
	setKey(c.last, &c.lastPeak, req.Key, r)
	return latency, ok
}

func (c *Controller[T]) logFailure(ctx context.Context, level slog.Level, msg string, err error, args ...any) {
	log := LoggerFrom(ctx)
	if !log.Enabled(ctx, level) {
		return
	}
	args = append(args, "error", err)
	var pe *PanicError
	if errors.As(err, &pe) {
		args = append(args, "stack", string(pe.Stack))
	}
	log.Log(ctx, level, msg, args...)
}

// info is what a reconcile's context carries about it.
type info struct {
	controller string
	key        string
	revision   int64
	attempt    int
	id         uint64
	batch      int // the keys of a ReconcileBatch call; 0 for one key
	base       *slog.Logger
}

type infoKey struct{}

// contextChunk hands out a worker's reconcile contexts from chunks of
// contextChunkSize, one allocation per chunk instead of one per reconcile.
// Each context is handed out once and never reused, so a reconciler may
// keep its context (in a goroutine it started) as long as it likes: it
// only keeps its chunk alive. Not safe for concurrent use: one per worker.
type contextChunk struct{ free []reconcileContext }

const contextChunkSize = 64

func (cc *contextChunk) next() *reconcileContext {
	if len(cc.free) == 0 {
		cc.free = make([]reconcileContext, contextChunkSize)
	}
	rc := &cc.free[0]
	cc.free = cc.free[1:]
	return rc
}

// reconcileContext carries a reconcile's info in one allocation (instead of
// a context.WithValue and the info it points to).
type reconcileContext struct {
	context.Context
	info info
}

// Value returns the reconcile's info for infoKey, else defers to the parent.
func (c *reconcileContext) Value(key any) any {
	if key == (infoKey{}) {
		return &c.info
	}
	return c.Context.Value(key)
}

// ID returns the reconcile ID carried by a Reconcile call's context (unique
// within the controller; "" outside a reconcile).
func ID(ctx context.Context) string {
	in, _ := ctx.Value(infoKey{}).(*info)
	if in == nil {
		return ""
	}
	return fmt.Sprintf("%s-%d", in.controller, in.id)
}

// LoggerFrom returns a logger for a Reconcile call, with attributes
// controller, key, revision, attempt and reconcile_id (in a ReconcileBatch
// call: controller, batch_size and reconcile_id); outside a reconcile
// it returns a logger that discards. It is built on demand, so a reconcile
// that does not log pays nothing for it.
func LoggerFrom(ctx context.Context) *slog.Logger {
	in, _ := ctx.Value(infoKey{}).(*info)
	if in == nil {
		return slog.New(slog.DiscardHandler)
	}
	if in.batch > 0 {
		return in.base.With("batch_size", in.batch, "reconcile_id", ID(ctx))
	}
	return in.base.With("key", in.key, "revision", in.revision, "attempt", in.attempt, "reconcile_id", ID(ctx))
}
