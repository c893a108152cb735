package reconcile

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/converge-go/converge/internal/ctxtime"
	"github.com/converge-go/converge/lock"
	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/store"
)

// ErrAlreadyRunning is returned by a second call of Controller.Run.
var ErrAlreadyRunning = errors.New("reconcile: controller already running")

// Controller runs the reconciliation loop for one kind of object: it caches
// a primary store through List and Watch, turns changes (and other sources,
// and resyncs) into keys on a workqueue, and has workers call the
// Reconciler for each key, one worker per key at a time.
//
// When the store becomes unreachable, the controller keeps its cache and
// keeps reconciling: other sources, resyncs and requeues still fire, with
// the last desired state it saw; status writes fail and back off; Health
// reports it degraded. When the store returns, the cache catches up (resuming
// its watch, or re-listing if the history it needs was compacted) and wakes
// exactly the keys that changed meanwhile.
type Controller[T any] struct {
	opts  Options[T]
	rec   Reconciler[T]
	cache *informer[T] // kept across runs: a later run re-lists and diffs
	ids   atomic.Uint64

	// queue is the current run's workqueue; each Run after the first gets a
	// fresh one, since a run ends by shutting its queue down.
	queue   atomic.Pointer[queue.Queue[string]]
	running atomic.Bool
	runs    atomic.Int64

	// mu guards the per-key bookkeeping below.
	mu sync.Mutex
	// pending holds, for each queued key, the revision of the latest change
	// not yet reconciled; WaitForRevision waits for it to empty up to R.
	pending map[string]int64
	// tombstones keep the last value of deleted keys until their deletion
	// is reconciled.
	tombstones map[string]store.Object[T]
	// last records each key's latest reconcile, for introspection.
	last map[string]lastReconcile
	// progress is closed when pending shrinks; nil while no one waits.
	progress chan struct{}
	// keep is observe's reusable buffer (only the cache's goroutine calls
	// observe).
	keep []bool

	workersMu  sync.Mutex
	workers    []context.CancelFunc
	workerCtx  context.Context // nil until Run starts workers
	reconCtx   context.Context
	workerWG   sync.WaitGroup
	wantWorker int
}

type lastReconcile struct {
	outcome  Outcome
	err      string
	at       time.Time
	duration time.Duration
	revision int64
}

// New returns a controller reconciling the objects of s with rec. It
// validates opts (errors match ErrInvalidOptions).
func New[T any](s store.Store[T], rec Reconciler[T], opts Options[T]) (*Controller[T], error) {
	if s == nil {
		return nil, fmt.Errorf("%w: nil store", ErrInvalidOptions)
	}
	if rec == nil {
		return nil, fmt.Errorf("%w: nil reconciler", ErrInvalidOptions)
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	opts.Logger = opts.Logger.With("controller", opts.Name)
	c := &Controller[T]{
		opts:       opts,
		rec:        rec,
		pending:    make(map[string]int64),
		tombstones: make(map[string]store.Object[T]),
		last:       make(map[string]lastReconcile),
		wantWorker: opts.Workers,
	}
	c.queue.Store(c.newQueue())
	c.cache = newInformer(s, opts.Prefix, opts.Logger, c.observe)
	for name, fn := range opts.Indexes {
		c.cache.indexes[name] = newIndex(fn)
	}
	return c, nil
}

func (c *Controller[T]) newQueue() *queue.Queue[string] {
	return queue.New(queue.Config[string]{RateLimiter: c.opts.RateLimiter, Metrics: c.opts.QueueMetrics})
}

// q returns the current run's workqueue.
func (c *Controller[T]) q() *queue.Queue[string] { return c.queue.Load() }

// NeedsLeaderElection reports whether the controller runs only in the
// leader of a Manager with an elector (see Options.WithoutLeaderElection).
func (c *Controller[T]) NeedsLeaderElection() bool { return !c.opts.WithoutLeaderElection }

// Name returns the controller's name.
func (c *Controller[T]) Name() string { return c.opts.Name }

// Lister reads the controller's cache.
func (c *Controller[T]) Lister() Lister[T] { return Lister[T]{in: c.cache} }

// observe is the cache's change callback: it records tombstones and
// pending revisions for a batch of changes under one lock, then queues
// their keys. Predicates run before, outside the lock.
func (c *Controller[T]) observe(changes []change[T]) {
	keep := c.keep[:0]
	for i := range changes {
		keep = append(keep, c.admit(&changes[i]))
	}
	c.mu.Lock()
	for i := range changes {
		ch := &changes[i]
		key := ch.key()
		if !ch.HasCur && !keep[i] {
			delete(c.tombstones, key) // a filtered deletion needs no cleanup
		}
		if !keep[i] {
			continue
		}
		if ch.HasCur {
			if len(c.tombstones) > 0 {
				delete(c.tombstones, key)
			}
		} else {
			c.tombstones[key] = ch.Old
		}
		if rev := ch.revision(); rev > c.pending[key] {
			c.pending[key] = rev
		}
	}
	c.mu.Unlock()
	q := c.q()
	for i := range changes {
		if !keep[i] {
			continue
		}
		prio := queue.PriorityNormal
		if changes[i].Initial {
			prio = queue.PriorityLow
		}
		q.AddWith(changes[i].key(), queue.AddOptions{Priority: prio})
	}
	c.keep = keep[:0]
}

// admit reports whether every predicate lets the change through.
func (c *Controller[T]) admit(ch *change[T]) bool {
	if len(c.opts.Predicates) == 0 {
		return true
	}
	old, cur := ch.pointers()
	for _, p := range c.opts.Predicates {
		if !p(old, cur) {
			return false
		}
	}
	return true
}

// Enqueue asks for key to be reconciled, as a source would.
func (c *Controller[T]) Enqueue(key string) { c.q().Add(key) }

// EnqueueAll asks for every cached key to be reconciled, at low priority,
// as a resync does.
func (c *Controller[T]) EnqueueAll() {
	for _, obj := range c.Lister().List() {
		c.q().AddWith(obj.Key, queue.AddOptions{Priority: queue.PriorityLow})
	}
}

// Revision returns the store revision the controller's cache reflects.
func (c *Controller[T]) Revision() int64 { return c.cache.currentRevision() }

// Run runs the controller until ctx ends: it starts the cache and the
// sources, waits for the initial list, then runs the workers. When ctx ends
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
	var synced <-chan struct{} = c.cache.synced
	again := c.runs.Add(1) > 1
	if again {
		// Act on nothing older than this run: wait for a fresh list.
		c.queue.Store(c.newQueue())
		synced = c.cache.relist()
	}
	log := c.opts.Logger
	intake, stopIntake := context.WithCancel(context.WithValue(ctx, loggerKey{}, log))
	var sources sync.WaitGroup
	sources.Go(func() { c.cache.run(intake) })
	for _, src := range c.opts.Sources {
		sources.Go(func() { c.runSource(intake, src) })
	}
	if c.opts.ResyncPeriod > 0 {
		sources.Go(func() { c.resync(intake) })
	}
	defer sources.Wait()
	defer stopIntake()

	select {
	case <-synced:
	case <-ctx.Done():
		c.q().ShutDown()
		return nil
	}
	if again {
		// The previous run's queue is gone: requeue every key, and the
		// deletions it had seen but not reconciled, which the cache no
		// longer holds.
		c.EnqueueAll()
		c.mu.Lock()
		unfinished := make([]string, 0, len(c.pending))
		for key := range c.pending {
			unfinished = append(unfinished, key)
		}
		c.mu.Unlock()
		for _, key := range unfinished {
			c.q().Add(key)
		}
	}
	log.Info("cache synced; starting workers", "workers", c.opts.Workers, "revision", c.cache.currentRevision())

	// Reconciles run on a context that outlives ctx by the grace period,
	// unless ctx carries a term of leadership (lock.FromContext): then they
	// are cancelled the moment that term is in doubt, so that a deposed
	// leader stops acting on the world.
	reconCtx, cancelReconciles := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelReconciles()
	if lk, ok := lock.FromContext(ctx); ok {
		stop := context.AfterFunc(lk.Context(), cancelReconciles)
		defer stop()
	}
	c.workersMu.Lock()
	c.workerCtx, c.reconCtx = ctx, reconCtx
	c.scaleLocked()
	c.workersMu.Unlock()

	<-ctx.Done()
	// No worker may start from here on (SetWorkers only records the count).
	c.workersMu.Lock()
	c.workers, c.workerCtx, c.reconCtx = nil, nil, nil
	c.workersMu.Unlock()
	stopIntake()
	c.q().ShutDown()
	done := make(chan struct{})
	go func() { c.workerWG.Wait(); close(done) }()
	grace := time.NewTimer(c.opts.GracePeriod)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
		log.Warn("grace period over; cancelling in-flight reconciles", "grace", c.opts.GracePeriod)
		cancelReconciles()
		<-done
	}
	log.Info("stopped")
	return nil
}

// runSource runs one source until intake ends, restarting it after errors.
func (c *Controller[T]) runSource(ctx context.Context, src Source) {
	failures := 0
	for {
		err := src.Start(ctx, c.Enqueue)
		if ctx.Err() != nil {
			return
		}
		failures++
		d := c.cache.backoff(failures)
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
		c.EnqueueAll()
	}
}

// SetWorkers changes how many workers reconcile at once (at least 1). Extra
// workers stop after their current reconcile. Before Run it sets the count
// Run starts with.
func (c *Controller[T]) SetWorkers(n int) {
	c.workersMu.Lock()
	defer c.workersMu.Unlock()
	c.wantWorker = max(n, 1)
	if c.workerCtx != nil {
		c.scaleLocked()
	}
}

// scaleLocked starts or stops workers to match wantWorker. workersMu is held.
func (c *Controller[T]) scaleLocked() {
	for len(c.workers) < c.wantWorker {
		ctx, cancel := context.WithCancel(c.workerCtx)
		c.workers = append(c.workers, cancel)
		reconCtx, q := c.reconCtx, c.q()
		c.workerWG.Go(func() { c.work(ctx, reconCtx, q) })
	}
	for len(c.workers) > c.wantWorker {
		n := len(c.workers) - 1
		c.workers[n]()
		c.workers = c.workers[:n]
	}
}

// work takes keys until ctx ends or the queue shuts down; reconciles run
// on reconCtx.
func (c *Controller[T]) work(ctx, reconCtx context.Context, q *queue.Queue[string]) {
	for {
		key, err := q.Get(ctx)
		if err != nil {
			return
		}
		c.process(reconCtx, q, key)
		q.Done(key)
	}
}
