package reconcile

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/converge-go/converge/internal/ctxtime"
	"github.com/converge-go/converge/lock"
	"github.com/converge-go/converge/queue"
)

// run is the state of one Run: the contexts and the writer its workers
// share, and the workers themselves. It lives from the start of the
// workers to the end of Run; the Controller points at it meanwhile
// (Controller.current), so that SetWorkers can start and stop workers.
type run[T any] struct {
	ctx      context.Context // ends with Run's context: workers stop taking keys
	reconCtx context.Context // reconciles' context: see startWorkers
	q        *queue.Queue[string]
	writer   *writer[T]
	workers  []context.CancelFunc // one per worker, to stop it
	wg       sync.WaitGroup
}

// Run runs the controller until ctx ends: it starts the cache and the
// sources, waits for the initial list to be in the cache, then runs the
// workers (the list's keys are queued as they are recorded, in chunks). When ctx ends
// it stops intake, lets in-flight reconciles finish for up to GracePeriod,
// then cancels their contexts and waits for them, and returns nil. It leaves
// no goroutine behind.
//
// Run may be called again after it returns (a leader-only controller runs
// once per term of leadership): the cache it kept is re-listed, exactly the
// keys that changed meanwhile are reported as changes, and every key is
// reconciled again at low priority, since the world may have drifted while
// the controller was not running. Calling Run while it runs returns
// ErrAlreadyRunning.
func (c *Controller[T]) Run(ctx context.Context) error {
	if !c.running.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	defer c.running.Store(false)
	// The first run's workers start once the initial list is in the cache,
	// while its keys are still being recorded and queued in chunks: the
	// first reconcile need not wait for the whole list, and every
	// reconcile still sees the whole list in the cache (Lister).
	var ready <-chan struct{} = c.cache.Filled()
	again := c.runs.Add(1) > 1
	var carried []queue.Item[string]
	if again {
		// The previous run's queue still holds the keys it had not handed
		// out, retries with their deadlines included: carry them over.
		carried = c.q().View().Snapshot()
		// Act on nothing older than this run: wait for a fresh list.
		c.queue.Store(c.newQueue())
		ready = c.cache.Relist()
	}
	intake, stopIntake := context.WithCancel(ctx)
	var sources sync.WaitGroup
	c.startIntake(intake, &sources)
	defer sources.Wait()
	defer stopIntake()

	select {
	case <-ready:
	case <-ctx.Done():
		c.q().ShutDown()
		return nil
	}
	if again {
		c.requeueAfterRelist(carried)
	}
	c.opts.Logger.Info("initial list cached; starting workers", "workers", c.opts.Workers)
	if c.opts.Shard != nil {
		cancel := c.opts.Shard.Subscribe(func(owns func(string) bool, rev int64) {
			sources.Go(func() { c.takeOver(intake, owns, rev) })
		})
		defer cancel()
	}
	r, cancelReconciles := c.startWorkers(ctx)
	defer cancelReconciles()
	<-ctx.Done()
	stopIntake()
	c.stopWorkers(ctx, r, cancelReconciles)
	return nil
}

// startIntake starts the cache, the sources, the resync, the checks of
// the dependencies and the checkpoint's writes, each until intake ends.
func (c *Controller[T]) startIntake(intake context.Context, sources *sync.WaitGroup) {
	sources.Go(func() { c.cache.Run(intake) })
	for i, src := range c.opts.Sources {
		sources.Go(func() { c.runSource(intake, src, sourceTrigger(i)) })
	}
	if c.opts.ResyncPeriod > 0 {
		sources.Go(func() { c.resync(intake) })
	}
	if c.keep != nil {
		sources.Go(func() { c.keepCheckpoint(intake) })
	}
	if c.circ != nil {
		sources.Go(func() { _ = c.deps.Run(intake) }) // nil: the controller runs once at a time
		sources.Go(func() { c.followDependencies(intake) })
	}
}

// requeueAfterRelist queues, at the start of a run after the first, every
// cached key, the deletions the previous run had seen but not reconciled
// (which the cache no longer holds), and what the previous run's queue
// held: that queue is gone.
func (c *Controller[T]) requeueAfterRelist(carried []queue.Item[string]) {
	c.enqueueAll(trigListed)
	c.mu.Lock()
	unfinished := c.led.pendingKeys()
	c.mu.Unlock()
	addAll(c.q(), unfinished, trigListed)
	c.carryOver(carried)
}

// startWorkers starts this run's workers and returns the run with the
// function that cancels its reconciles.
//
// Reconciles run on a context that outlives ctx by the grace period,
// unless ctx carries a term of leadership (lock.FromContext): then they
// are cancelled the moment that term is in doubt, so that a deposed
// leader stops acting on the world.
func (c *Controller[T]) startWorkers(ctx context.Context) (*run[T], context.CancelFunc) {
	reconCtx, cancelReconciles := context.WithCancel(context.WithoutCancel(ctx))
	term, inTerm := lock.FromContext(ctx)
	if inTerm {
		stop := context.AfterFunc(term.Context(), cancelReconciles)
		cancel := cancelReconciles
		cancelReconciles = func() { stop(); cancel() }
	}
	r := &run[T]{ctx: ctx, reconCtx: reconCtx, q: c.q(), writer: newWriter(c, term)}
	c.workersMu.Lock()
	c.current = r
	c.scaleLocked()
	c.workersMu.Unlock()
	return r, cancelReconciles
}

// stopWorkers ends run r once its context has ended: no worker starts
// from here on (SetWorkers only records the count); the hand-outs stop;
// the reconciles in flight get the grace period to finish, then have their
// contexts cancelled. Keys left in the queue stay there for the next run's
// carry-over.
func (c *Controller[T]) stopWorkers(ctx context.Context, r *run[T], cancelReconciles context.CancelFunc) {
	c.workersMu.Lock()
	c.current = nil
	c.workersMu.Unlock()
	r.q.ShutDown()
	grace, cancelGrace := context.WithTimeout(context.WithoutCancel(ctx), c.opts.GracePeriod)
	defer cancelGrace()
	if _, err := r.q.Drain(grace); err != nil {
		c.opts.Logger.Warn("grace period over; cancelling in-flight reconciles", "grace", c.opts.GracePeriod)
		cancelReconciles()
	}
	r.wg.Wait()
	c.opts.Logger.Info("stopped")
}

// takeOver reconciles the cached keys of buckets this replica has just
// taken, once the cache reflects the store at the take's revision, so that
// the new owner acts on nothing older than the handover.
func (c *Controller[T]) takeOver(ctx context.Context, owns func(string) bool, rev int64) {
	if err := c.cache.WaitRevision(ctx, rev); err != nil {
		return
	}
	q := c.q()
	c.cache.EachKey(func(key string) {
		if owns(key) {
			q.AddWith(key, queue.AddOptions{Tags: trigListed})
		}
	})
}

// carryOver queues the keys a previous run's queue still held (waiting or
// dirty keys at once, retries at their deadlines) and every key whose last
// reconcile failed (its retry may have been asked of a queue already shut
// down). A retry is thus never lost to a change of term, whatever woke its
// key.
func (c *Controller[T]) carryOver(items []queue.Item[string]) {
	q := c.q()
	for _, it := range items {
		switch {
		case it.State == queue.Waiting, it.Dirty:
			q.AddWith(it.Key, queue.AddOptions{Priority: it.Priority, Tags: it.Tags})
		case !it.Until.IsZero():
			q.AddWith(it.Key, queue.AddOptions{After: time.Until(it.Until), Tags: it.Tags | trigRetry})
		}
	}
	c.mu.Lock()
	owed := c.led.unsettled()
	c.mu.Unlock()
	addAll(q, owed, trigRetry)
}

// addAll queues keys at once, woken by why.
func addAll(q *queue.Queue[string], keys []string, why trigger) {
	for _, key := range keys {
		q.AddWith(key, queue.AddOptions{Tags: why})
	}
}

// runSource runs one source until intake ends, restarting it after errors.
func (c *Controller[T]) runSource(ctx context.Context, src Source, tag trigger) {
	failures := 0
	enqueue := func(key string) { _ = c.enqueue(key, tag) } // a refusal is logged and counted
	for {
		var err error
		if cs, ok := src.(controllerSource); ok {
			err = cs.startFor(ctx, enqueue, c.opts.Logger, c.opts.HeartbeatInterval, &c.echoes)
		} else {
			err = src.Start(ctx, enqueue)
		}
		if ctx.Err() != nil {
			return
		}
		failures++
		d := c.cache.Backoff(failures)
		c.opts.Logger.Error("source failed; restarting", "error", err, "retry_in", d)
		if ctxtime.Sleep(ctx, d) != nil {
			return
		}
	}
}

// resync queues every cached key at low priority about every ResyncPeriod.
func (c *Controller[T]) resync(ctx context.Context) {
	for {
		p := c.opts.ResyncPeriod
		jitter := time.Duration(rand.Int64N(int64(p)/5+1)) - p/10
		if ctxtime.Sleep(ctx, p+jitter) != nil {
			return
		}
		c.enqueueAll(trigResync)
	}
}
