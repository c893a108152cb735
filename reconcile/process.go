package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
func (c *Controller[T]) process(ctx context.Context, q *queue.Queue[string], key string) {
	req, pendingRev := c.request(key)
	ctx = &reconcileContext{Context: ctx, info: info{
		controller: c.opts.Name, key: key, revision: req.Object.Revision,
		attempt: req.Attempt, id: c.ids.Add(1), base: c.opts.Logger,
	}}
	if c.opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opts.Timeout)
		defer cancel()
	}
	start := time.Now()
	res, err := c.call(ctx, req)
	elapsed := time.Since(start)

	outcome := classify(err)
	switch outcome {
	case Success:
		q.Forget(key)
		if res.RequeueAfter > 0 {
			q.AddAfter(key, res.RequeueAfter)
		}
	case TerminalFailure:
		q.Forget(key)
		c.logFailure(ctx, slog.LevelError, "reconcile failed terminally; not retrying", err)
	case Conflict:
		// Reconcile again at once if the cache already holds a newer
		// object; otherwise the watch event bringing it will.
		if cur, ok := c.cache.get(key); ok && cur.Revision != req.Object.Revision || !ok && !req.Deleted {
			q.Add(key)
		} else {
			q.AddAfter(key, conflictRetry)
		}
		c.logFailure(ctx, slog.LevelDebug, "write conflicted; reconciling the newer object", err)
	default: // Failure, Panicked
		delay := c.opts.RateLimiter.When(key)
		if res.RequeueAfter > 0 {
			delay = min(delay, res.RequeueAfter)
		}
		q.AddAfter(key, delay)
		level := slog.LevelWarn
		if outcome == Panicked {
			level = slog.LevelError
		}
		c.logFailure(ctx, level, "reconcile failed; backing off", err, "retry_in", delay)
	}
	c.finish(req, pendingRev, outcome, err, start, elapsed)
	if c.opts.Metrics != nil {
		report(c.opts.Metrics, c.opts.Name, outcome, res, elapsed)
	}
}

// request builds the Request for key from the cache, and returns the
// pending revision it covers.
func (c *Controller[T]) request(key string) (Request[T], int64) {
	req := Request[T]{Key: key, Attempt: c.opts.RateLimiter.NumRequeues(key)}
	obj, ok := c.cache.get(key)
	c.mu.Lock()
	defer c.mu.Unlock()
	if ok {
		req.Object = obj
	} else {
		req.Deleted = true
		req.Object = c.tombstones[key] // zero if never seen
	}
	// This reconcile covers the changes up to the revision it sees, not
	// those that reached the pending set after the cache was read.
	return req, min(c.pending[key], req.Object.Revision)
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

func classify(err error) Outcome {
	if err == nil {
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
// terminal failure completes the changes up to pendingRev (the pending
// entry goes if no newer change arrived meanwhile) and, for a deletion,
// drops its tombstone (unless the key was deleted again since) and its
// history; every outcome is kept for introspection.
//
// Lock order: the cache's callback takes c.mu, so nothing here may take the
// cache's lock while holding c.mu.
func (c *Controller[T]) finish(req Request[T], pendingRev int64, outcome Outcome, err error, start time.Time, elapsed time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if outcome == Success || outcome == TerminalFailure {
		if rev, ok := c.pending[req.Key]; ok && rev <= pendingRev {
			delete(c.pending, req.Key)
			if c.progress != nil {
				close(c.progress)
				c.progress = nil
			}
		}
		if tomb, ok := c.tombstones[req.Key]; ok && req.Deleted && tomb.Revision == req.Object.Revision {
			delete(c.tombstones, req.Key)
		}
	}
	if outcome == Success && req.Deleted {
		delete(c.last, req.Key) // deleted and cleaned up: forget it
		return
	}
	r := lastReconcile{outcome: outcome, at: start, duration: elapsed, revision: req.Object.Revision}
	if err != nil {
		r.err = err.Error()
	}
	c.last[req.Key] = r
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
	base       *slog.Logger
}

type infoKey struct{}

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
// controller, key, revision, attempt and reconcile_id; outside a reconcile
// it returns a logger that discards. It is built on demand, so a reconcile
// that does not log pays nothing for it.
func LoggerFrom(ctx context.Context) *slog.Logger {
	in, _ := ctx.Value(infoKey{}).(*info)
	if in == nil {
		return slog.New(slog.DiscardHandler)
	}
	return in.base.With("key", in.key, "revision", in.revision, "attempt", in.attempt, "reconcile_id", ID(ctx))
}
