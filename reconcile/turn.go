package reconcile

import (
	"context"
	"math"
	"time"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile/tracing"
)

// turn is one hand-out of a key as a worker holds it, from the queue's Get
// to its Done, whether the key is reconciled alone or in a batch: the
// claim on the key, its Request (with the writer its writes go through),
// how its reconcile ended, and what follows. beginTurn builds it, settle
// decides and records what follows the reconcile, and done gives the key
// back to the queue; the same three, in that order, on both paths.
//
// A turn is ready when its reconcile is to be called; a turn beginTurn did
// not make ready is over already (its key is not this replica's, or it
// awaits the store and was settled at once) and only waits for done.
type turn[T any] struct {
	c   *Controller[T]
	q   *queue.Queue[string]
	req Request[T]
	why trigger // what woke the key
	b   begun
	// ready: the reconcile is to be called and the turn settled after it.
	ready bool
	// unwatch stops the watch that ends the call's context when the
	// claim's ownership ends; nil without a claim.
	unwatch func() bool
	// How the reconcile ended, set by the path that called it: the context
	// its failures are logged with, its result, and when it ran.
	log     context.Context
	res     Result
	err     error
	start   time.Time
	elapsed time.Duration
	// The reconcile's span (Options.Tracer), nil if not traced, and what
	// settle found, which ends it.
	span  tracing.ReconcileSpan
	ended tracing.ReconcileEnd
}

// beginTurn begins key h's turn, whose reconcile will run in cc. Under a
// Sharder it claims the key first: a key this replica does not own is
// disowned, and the turn is over. It builds the key's Request (request)
// with the run's writer, which under a Sharder carries the claim's guards
// on every write, and has cc's context end when the claim's ownership
// does. A key that awaits the store is settled at once (AwaitingStore).
func (c *Controller[T]) beginTurn(r *run[T], h queue.Handout[string], cc *callContext) turn[T] {
	t := turn[T]{c: c, q: r.q, why: trigger(h.Tags)}
	t.req.Key = h.Key
	var claim Claim
	if c.opts.Shard != nil {
		var owned bool
		if claim, owned = c.opts.Shard.Claim(h.Key); !owned {
			c.disown(h.Key, r.q)
			return t
		}
	}
	t.req, t.b = c.request(h)
	if t.b.await {
		t.log, t.err, t.start = cc.ctx, errAwaitingStore, time.Now()
		t.settle()
		return t
	}
	t.req.Store = r.writer
	if claim.Owned != nil {
		t.req.Store = guardedWriter[T]{writer: r.writer, guards: claim.Guards}
		t.unwatch = cc.endWith(claim.Owned)
	}
	t.ready = true
	return t
}

// info is what the context of the turn's reconcile carries about it, under
// a new reconcile ID.
func (t *turn[T]) info() info {
	c := t.c
	return info{
		ctl: &c.about, key: t.req.Key, revision: t.req.Object.Revision,
		retries: int32(min(t.req.Retries, math.MaxInt32)), id: c.ids.Add(1),
	}
}

// done ends the turn: it stops watching the claim's ownership and gives
// the key back to the queue (Done), which may hand it out again.
func (t *turn[T]) done() {
	if t.unwatch != nil {
		t.unwatch()
	}
	t.q.Done(t.req.Key)
}

// callContext is the context one Reconcile or ReconcileBatch call runs in,
// shared by the turns it serves: it ends when the run cancels its
// reconciles, when the ownership of any of its turns' claims ends
// (endWith), at Options.Timeout after the call began (begin), and, once
// made cancelable, at end.
type callContext struct {
	ctx    context.Context    // without the call's info and timeout
	cancel context.CancelFunc // ends ctx; nil until it is cancelable
	stop   context.CancelFunc // ends the timeout; nil without one
}

// cancelable makes cc's context one that end, or a lost claim, ends.
func (cc *callContext) cancelable() {
	if cc.cancel == nil {
		cc.ctx, cc.cancel = context.WithCancel(cc.ctx)
	}
}

// endWith has cc's context end when owned does, until the returned stop
// is called.
func (cc *callContext) endWith(owned context.Context) (stop func() bool) {
	cc.cancelable()
	return context.AfterFunc(owned, cc.cancel)
}

// begin returns the context of the call: rc, carrying in, over cc's
// context, bounded by timeout if it is positive.
func (cc *callContext) begin(rc *reconcileContext, in info, timeout time.Duration) context.Context {
	*rc = reconcileContext{Context: cc.ctx, info: in}
	if timeout <= 0 {
		return rc
	}
	ctx, stop := context.WithTimeout(rc, timeout)
	cc.stop = stop
	return ctx
}

// end ends the call's context, once the call has returned and its turns
// are settled.
func (cc *callContext) end() {
	if cc.stop != nil {
		cc.stop()
	}
	if cc.cancel != nil {
		cc.cancel()
	}
}
