package reconcile

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/converge-go/converge/internal/nilness"
	"github.com/converge-go/converge/internal/running"
	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile/dependency"
	"github.com/converge-go/converge/reconcile/internal/cache"
	"github.com/converge-go/converge/store"
)

// ErrAlreadyRunning is returned by Controller.Run called while the
// controller runs; Run may be called again once it has returned. errors.Is
// matches it with the ErrAlreadyRunning of every converge package (a Run
// or Start of any of them called while it runs), whose messages name the
// package that refused the call.
var ErrAlreadyRunning error = running.New("reconcile")

// Controller runs the reconciliation loop for one kind of object: it caches
// a primary store through List and Watch, turns changes (and other sources,
// and resyncs) into keys on a workqueue, and has workers call the
// Reconciler for each key, one worker per key at a time.
//
// When the store becomes unreachable, the controller keeps its cache and
// keeps reconciling: other sources, resyncs and requeues still fire, with
// the last desired state it saw; status writes fail and back off; Health
// reports it degraded. An unreachable store is detected within two
// Options.HeartbeatInterval (4 seconds by default), even one whose watch
// stays open and silent: each interval the controller asks its watch for a
// progress report (store.ProgressRequester) and gives the watch up when one
// stays unanswered with nothing else heard. Health stays degraded until the
// store serves again (a list, an event or a progress report), and the
// retries back off further while it does not. When the store returns, the
// cache catches up (resuming its watch, or re-listing if the history it
// needs was compacted) and wakes exactly the keys that changed meanwhile.
// Before it resumes a watch it checks the store's identity
// (store.Identifier): a store of another identity is re-listed and every
// key of it reported as changed, since its revisions say nothing of the
// old store's. With Options.Checkpoint, a controller started while its
// store cannot be listed reconciles toward its checkpoint (recall.go).
//
// The controller's view is the valid store keys under Options.Prefix. A
// key outside it, handed in by a Source, a FromStore mapper or Enqueue, is
// refused where it enters and never reconciled (see Health.Refused); a key
// of the view that the cache does not hold is reconciled as Deleted.
//
// Every key of a multi-key transaction (several keys at one revision)
// reaches the cache and is reconciled; a watch resumed in the middle of a
// revision neither skips nor repeats a key of it. A Deleted request for a
// key the cache held carries the key's last value. A failed reconcile's
// retry survives the end of a run (a term of leadership) and is made by the
// next one. Per-key records (pending changes, tombstones, last outcomes)
// go once the key is reconciled and gone: memory follows the keys alive.
//
// The loop's phases live in files named for them: intake.go (changes
// become keys), run.go (Run, sources, resync, carry-over between runs),
// workers.go (hand-outs, reconciles and what follows each), circuit.go
// (holding the hand-outs while a dependency is down), recall.go (the
// start from a checkpoint), checkpointing.go and journal.go (keeping it
// current, from what the journal observes of the cache), replaced.go (a
// store of another history), the ledger (ledger*.go: every per-key fact),
// and introspection (health.go, inspect.go). The cache is a package of its
// own, reconcile/internal/cache, that knows nothing of checkpoints.
type Controller[T any] struct {
	store store.Store[T]
	opts  Options[T]
	about controllerInfo // every reconcile's context points to it
	rec   Reconciler[T]
	batch BatchReconciler[T] // rec, when Options.BatchSize is above 1
	marks bool               // values of T can be marked for deletion (deleting.go)
	cache *cache.Cache[T]    // kept across runs: a later run re-lists and diffs
	ids   atomic.Uint64
	// refused counts the keys refused as outside the view (see inView).
	refused refusals
	// deps checks Options.Dependencies (an empty set without any), and
	// circ holds the hand-outs while one is down (nil without any).
	deps *dependency.Set
	circ *circuit
	// keep writes Options.Checkpoint and reports it, from what journal,
	// the cache's observer, keeps (both nil without one).
	keep    *keeper[T]
	journal *journal[T]

	// queue is the current run's workqueue; each Run after the first gets a
	// fresh one, since a run ends by shutting its queue down.
	queue   atomic.Pointer[queue.Queue[string]]
	running atomic.Bool
	runs    atomic.Int64

	// mu guards the ledger. Lock order: mu, then the queue's lock, then
	// the cache's (the cache calls observe without its lock held).
	mu  sync.Mutex
	led *ledger[T]
	// echoes are the writes made through Through whose echoes the store
	// sources skip: keys of other stores, not the ledger's; it has its
	// own lock, taken alone.
	echoes echoes
	// rulings and adds are observe's reusable buffers (only the cache's
	// goroutine calls observe); adds holds at most addChunk adds.
	rulings []ruling
	adds    []queue.BatchAdd[string]

	// workersMu guards the current run's workers (see run).
	workersMu   sync.Mutex
	current     *run[T] // nil between runs
	wantWorkers int
}

// New returns a controller reconciling the objects of s with rec. It
// checks opts (errors match ErrInvalid) and fills in their defaults.
func New[T any](s store.Store[T], rec Reconciler[T], opts Options[T]) (*Controller[T], error) {
	if nilness.Is(s) {
		return nil, fmt.Errorf("%w: nil store", ErrInvalid)
	}
	if nilness.Is(rec) {
		return nil, fmt.Errorf("%w: nil reconciler", ErrInvalid)
	}
	if err := opts.check(); err != nil {
		return nil, err
	}
	opts.fillDefaults()
	opts.Dependencies = slices.Clone(opts.Dependencies)
	deps, err := dependency.NewSet(opts.Dependencies...)
	if err != nil {
		return nil, fmt.Errorf("reconcile: Dependencies: %w", err)
	}
	batch, isBatch := rec.(BatchReconciler[T])
	if opts.BatchSize > 1 && !isBatch {
		return nil, fmt.Errorf("%w: BatchSize %d for a reconciler that does not implement BatchReconciler", ErrInvalid, opts.BatchSize)
	}
	opts.Logger = opts.Logger.With("controller", opts.Name)
	c := &Controller[T]{
		store:       s,
		opts:        opts,
		rec:         rec,
		led:         newLedger[T](time.Now()),
		wantWorkers: opts.Workers,
		marks:       marksDeletion[T](),
		deps:        deps,
		about:       controllerInfo{name: opts.Name, base: opts.Logger, tracer: opts.Tracer},
	}
	if len(opts.Dependencies) > 0 {
		c.circ = newCircuit(deps, opts.Logger)
	}
	if opts.BatchSize > 1 {
		c.batch = batch
	}
	c.queue.Store(c.newQueue())
	copts := cache.Options[T]{
		Prefix:     opts.Prefix,
		Logger:     opts.Logger,
		Heartbeat:  opts.HeartbeatInterval,
		Tombstones: true,
		Indexes:    opts.Indexes,
		Hooks:      cache.Hooks[T]{Changed: c.observe, Listing: c.listing, Replaced: c.storeReplaced},
	}
	if c.keep = newKeeper(opts.Checkpoint); c.keep != nil {
		c.journal = newJournal[T]()
		copts.Observer = c.journal
		copts.Restore = cache.Restore{Load: c.recallCheckpoint, After: opts.Checkpoint.StartAfter, CaughtUp: c.storeBack}
	}
	c.cache = cache.New(s, copts)
	return c, nil
}

func (c *Controller[T]) newQueue() *queue.Queue[string] {
	return queue.New(queue.Options[string]{RateLimiter: c.opts.RateLimiter, Metrics: c.opts.QueueMetrics})
}

// q returns the current run's workqueue.
func (c *Controller[T]) q() *queue.Queue[string] { return c.queue.Load() }

// NeedsLeaderElection reports whether the controller runs only in the
// leader of a Manager with an elector (see Options.WithoutLeaderElection).
func (c *Controller[T]) NeedsLeaderElection() bool { return !c.opts.WithoutLeaderElection }

// Name returns the controller's name.
func (c *Controller[T]) Name() string { return c.opts.Name }

// Lister reads the controller's cache.
func (c *Controller[T]) Lister() Lister[T] { return Lister[T]{c: c.cache} }

// listing makes room in the ledger and the queue for a list of n changes
// about to be observed.
func (c *Controller[T]) listing(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.led.reserve(n)
	c.q().Grow(n)
}
