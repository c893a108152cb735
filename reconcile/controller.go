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
	"github.com/converge-go/converge/internal/mapshrink"
	"github.com/converge-go/converge/internal/nilness"
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
// reports it degraded. An unreachable store is detected within two
// Options.HeartbeatInterval (4 seconds by default), even one whose watch
// stays open and silent: each interval the controller asks its watch for a
// progress report (store.ProgressRequester) and gives the watch up when one
// stays unanswered with nothing else heard. Health stays degraded until the
// store serves again (a list, an event or a progress report), and the
// retries back off further while it does not. When the store returns, the
// cache catches up (resuming its watch, or re-listing if the history it
// needs was compacted) and wakes exactly the keys that changed meanwhile.
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
type Controller[T any] struct {
	store store.Store[T]
	opts  Options[T]
	rec   Reconciler[T]
	batch BatchReconciler[T] // rec, when Options.BatchSize is above 1
	cache *informer[T]       // kept across runs: a later run re-lists and diffs
	ids   atomic.Uint64
	// refused counts the keys refused as outside the view (see inView).
	refused refusals

	// queue is the current run's workqueue; each Run after the first gets a
	// fresh one, since a run ends by shutting its queue down.
	queue   atomic.Pointer[queue.Queue[string]]
	running atomic.Bool
	runs    atomic.Int64

	// mu guards the per-key bookkeeping below.
	mu sync.Mutex
	// pending holds, for each key with changes not yet reconciled, which
	// ones; WaitForRevision waits until no key's first is at or below R.
	pending map[string]pendingChange
	// conflicted holds the keys whose last status write conflicted while
	// the cache did not yet hold the newer object: its arrival wakes them,
	// whatever the predicates say.
	conflicted map[string]struct{}
	// observed is the revision of the newest change observe has seen, and
	// observedKeys the keys it has seen at that revision (several keys
	// may share one).
	observed     int64
	observedKeys map[string]struct{}
	// coveredAhead holds, per key, a revision a successful or terminal
	// reconcile covered before observe saw its change (the cache is
	// updated before observe hears of it): when that change arrives it
	// neither wakes the key nor waits, and a deletion's tombstone goes.
	coveredAhead map[string]int64
	// own tracks the writes made through Request.Store to keys of the
	// cache's view, until the cache holds them (see writer).
	own map[string]*ownWrite[T]
	// freeOwn keeps records of own writes for reuse (see dropOwnLocked).
	freeOwn []*ownWrite[T]
	// last records each key's latest reconcile, for introspection. A key's
	// record goes once its deletion is reconciled.
	last map[string]lastReconcile
	// lastErr holds the error text of the keys whose latest reconcile
	// returned an error (lastReconcile.failed).
	lastErr map[string]string
	// epoch is when New made the controller: pending changes keep their
	// times as monoTime after it.
	epoch time.Time
	// The peaks are the sizes the maps they name have reached since they
	// were last rebuilt (see setKey and forgetKey).
	pendingPeak, lastPeak, lastErrPeak                     int
	ownPeak, failingPeak, coveredAheadPeak, conflictedPeak int
	// failing holds the keys whose latest reconciles failed (transiently
	// or terminally), with when the first of those failures ended, for
	// the stale alarm.
	failing map[string]time.Time
	// progress is closed when pending shrinks; nil while no one waits.
	progress chan struct{}
	// verdicts and adds are observe's reusable buffers (only the cache's
	// goroutine calls observe); adds holds at most addChunk adds.
	verdicts []verdict
	adds     []queue.BatchAdd[string]

	workersMu  sync.Mutex
	workers    []context.CancelFunc
	workerCtx  context.Context // nil until Run starts workers
	reconCtx   context.Context
	writer     *writer[T] // the current run's Request.Store
	workerWG   sync.WaitGroup
	wantWorker int
}

// pendingChange records the changes of one key that no successful or
// terminal reconcile has covered yet. A reconcile covers the changes up to
// the revision of the object it was given; changes that arrive meanwhile
// stay pending, starting at the first of them.
type pendingChange struct {
	first     int64    // revision of the oldest change not yet covered
	latest    int64    // revision of the newest change
	covering  int64    // revision the in-flight reconcile was given
	next      int64    // the first change newer than covering, seen while in flight
	since     monoTime // when observe saw the change at first
	nextSince monoTime // when observe saw the change at next
	inflight  bool
	touched   bool // a change arrived while in flight (the key will be handed out again)
	// reconciled mirrors whether the key has a last reconcile (a record in
	// Controller.last), so that a walk over pending keys need not look
	// each one up there too.
	reconciled bool
}

// monoTime is a time as nanoseconds since the controller's epoch (when New
// returned it), read from the monotonic clock: 8 bytes where a time.Time
// takes 24, and immune to steps of the wall clock. It may be 0 (a change
// seen in the instant of New), so it does not stand for "none".
type monoTime int64

// mono returns t as a monoTime; timeAt converts back.
func (c *Controller[T]) mono(t time.Time) monoTime { return monoTime(t.Sub(c.epoch)) }

func (c *Controller[T]) timeAt(m monoTime) time.Time { return c.epoch.Add(time.Duration(m)) }

// wallTime is a time as wall-clock nanoseconds since the Unix epoch; 0 is
// the zero time.
type wallTime int64

func wallOf(t time.Time) wallTime {
	if t.IsZero() {
		return 0
	}
	return wallTime(t.UnixNano())
}

func (w wallTime) time() time.Time {
	if w == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(w))
}

// describeLast fills s with r, the key's latest reconcile; a failure that
// began before limit makes it stale.
func (c *Controller[T]) describeLast(s *KeyState, r *lastReconcile, limit time.Time) {
	s.LastOutcome, s.LastAt, s.LastDuration, s.LastRevision = r.outcome(), r.at.time(), r.duration, r.revision
	if r.failed {
		s.LastError = c.lastErr[s.Key]
	}
	s.LastTriggers = c.triggerNamesOf(r.triggers)
	s.LastSuccess, s.FailingSince, s.LastConvergence = r.success.time(), r.failingSince.time(), r.converged
	s.Stale = r.failingSince != 0 && s.FailingSince.Before(limit)
}

// verdict is what observe does with one change.
type verdict uint8

const (
	drop verdict = iota // filtered out by a predicate
	wake                // filtered out, but wakes a conflicted key
	keep                // queued and waited for
)

// lastReconcile is what the controller keeps of a key's latest reconcile,
// for introspection and the stale alarm. It is kept small, one of these
// per key reconciled: times as wall-clock
// nanoseconds and the outcome as a code (72 bytes; over 128 a map would
// keep every value behind a pointer of its own, one allocation per key).
type lastReconcile struct {
	at       wallTime
	duration time.Duration
	revision int64
	// success is when the key's latest successful reconcile started;
	// failingSince when the first failure after it ended (zero while the
	// key is not failing).
	success      wallTime
	failingSince wallTime
	// converged is the convergence latency of the latest change a
	// successful reconcile covered.
	converged time.Duration
	triggers  trigger // what woke the key for this reconcile
	code      outcomeCode
	// failed: the reconcile returned an error, whose text is in
	// Controller.lastErr (few keys fail, so the text is kept aside).
	failed bool
}

// outcome returns how the reconcile ended.
func (r *lastReconcile) outcome() Outcome { return outcomes[r.code] }

// New returns a controller reconciling the objects of s with rec. It
// validates opts (errors match ErrInvalid).
func New[T any](s store.Store[T], rec Reconciler[T], opts Options[T]) (*Controller[T], error) {
	if nilness.Is(s) {
		return nil, fmt.Errorf("%w: nil store", ErrInvalid)
	}
	if nilness.Is(rec) {
		return nil, fmt.Errorf("%w: nil reconciler", ErrInvalid)
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	batch, isBatch := rec.(BatchReconciler[T])
	if opts.BatchSize > 1 && !isBatch {
		return nil, fmt.Errorf("%w: BatchSize %d for a reconciler that does not implement BatchReconciler", ErrInvalid, opts.BatchSize)
	}
	opts.Logger = opts.Logger.With("controller", opts.Name)
	c := &Controller[T]{
		store:        s,
		opts:         opts,
		rec:          rec,
		pending:      make(map[string]pendingChange),
		conflicted:   make(map[string]struct{}),
		own:          make(map[string]*ownWrite[T]),
		observedKeys: make(map[string]struct{}),
		coveredAhead: make(map[string]int64),
		last:         make(map[string]lastReconcile),
		lastErr:      make(map[string]string),
		failing:      make(map[string]time.Time),
		wantWorker:   opts.Workers,
		epoch:        time.Now(),
	}
	if opts.BatchSize > 1 {
		c.batch = batch
	}
	c.queue.Store(c.newQueue())
	c.cache = newInformer(s, opts.Prefix, opts.Logger, opts.HeartbeatInterval, c.observe)
	c.cache.keepTombstones()
	for name, fn := range opts.Indexes {
		c.cache.indexes[name] = newIndex(fn)
	}
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
func (c *Controller[T]) Lister() Lister[T] { return Lister[T]{in: c.cache} }

// observe is the cache's change callback: it records pending changes for
// a batch under one lock, then queues their keys. Predicates run before,
// outside the lock. The cache keeps the tombstone of every removed key, so
// a Deleted request always carries the last value; a deletion that no
// predicate lets through and nothing waits for needs none.
func (c *Controller[T]) observe(changes []change[T]) {
	verdicts := c.verdicts[:0]
	kept := 0
	for i := range changes {
		v := drop
		if c.admit(&changes[i]) {
			v = keep
			kept++
		}
		verdicts = append(verdicts, v)
	}
	var unwanted []int // filtered deletions whose tombstones can go
	c.mu.Lock()
	now := time.Now() // when observe saw the batch
	c.reserveLocked(kept)
	c.noteObservedLocked(changes)
	for i := range changes {
		ch := &changes[i]
		key := ch.key()
		rev := ch.revision()
		if r, ok := c.coveredAhead[key]; ok && rev <= r {
			// A reconcile already covered this change.
			if rev == r {
				forgetKey(&c.coveredAhead, &c.coveredAheadPeak, key)
			}
			verdicts[i] = drop
			if !ch.HasCur {
				unwanted = append(unwanted, i)
			}
			continue
		}
		if len(c.own) > 0 && c.ownChangeLocked(ch, verdicts[i] == keep) {
			verdicts[i] = drop // the controller's own write: no wake-up
			continue
		}
		if verdicts[i] == drop {
			if _, ok := c.conflicted[key]; ok {
				// A reconcile whose write conflicted waits for this
				// newer object: wake it, whatever the predicates say.
				forgetKey(&c.conflicted, &c.conflictedPeak, key)
				verdicts[i] = wake
			} else if _, ok := c.pending[key]; !ok && !ch.HasCur {
				unwanted = append(unwanted, i)
			}
			continue
		}
		if verdicts[i] != keep {
			continue
		}
		c.addPendingLocked(key, ch.revision(), now)
	}
	// Queue under c.mu, so that a finishing reconcile, which asks the
	// queue under c.mu whether its key will be handed out again, sees
	// these adds (lock order: c.mu, then the queue's, then the cache's).
	// The keys go in by AddBatch, a lock of the queue per addChunk keys.
	q := c.q()
	adds := c.adds[:0]
	for i := range changes {
		if verdicts[i] == drop {
			continue
		}
		prio := queue.PriorityNormal
		if changes[i].Initial {
			prio = queue.PriorityLow
		}
		adds = append(adds, queue.BatchAdd[string]{Key: changes[i].key(), Options: queue.AddOptions{Priority: prio, Tags: changeTrigger(&changes[i])}})
		if len(adds) == addChunk {
			q.AddBatch(adds)
			adds = adds[:0]
		}
	}
	q.AddBatch(adds)
	clear(adds[:cap(adds)]) // the buffer outlives the batch: drop its keys
	c.adds = adds[:0]
	for _, i := range unwanted {
		if key := changes[i].key(); !q.Queued(key) {
			// Nothing will hand the key out again; if something will, that
			// request carries the tombstone and its finish lets it go.
			c.cache.forgetTombstone(key, changes[i].revision())
		}
	}
	c.mu.Unlock()
	c.verdicts = verdicts[:0]
}

// noteObservedLocked records that observe has seen a batch of changes;
// c.mu is held for the whole batch, so the batch is noted at once: the
// newest revision, and the keys changed at it, whatever the batch's order
// (an initial list's revisions come in key order, not revision order).
func (c *Controller[T]) noteObservedLocked(changes []change[T]) {
	top := c.observed
	for i := range changes {
		top = max(top, changes[i].revision())
	}
	if top > c.observed {
		c.observed = top
		if len(c.observedKeys) > 64 {
			c.observedKeys = make(map[string]struct{})
		} else {
			clear(c.observedKeys)
		}
	}
	for i := range changes {
		if changes[i].revision() == top {
			c.observedKeys[changes[i].key()] = struct{}{}
		}
	}
}

// observedLocked reports whether observe has seen key's change at rev (the
// cache holds changes before observe hears of them); c.mu is held.
func (c *Controller[T]) observedLocked(key string, rev int64) bool {
	if rev < c.observed {
		return true
	}
	_, ok := c.observedKeys[key]
	return rev == c.observed && ok
}

// reserveLocked makes room in the empty per-key maps for a burst of n
// changes (an initial list), so that they are sized once instead of
// rehashed as they grow; c.mu is held. Every one of those keys gets a
// pending change, then a last reconcile.
func (c *Controller[T]) reserveLocked(n int) {
	if n <= shrinkAbove {
		return
	}
	// The peaks count the room made, so that a map left mostly empty is
	// rebuilt small like one that grew (see shrunk).
	if len(c.pending) == 0 {
		c.pending = make(map[string]pendingChange, n)
		c.pendingPeak = max(c.pendingPeak, n)
	}
	if len(c.last) == 0 {
		c.last = make(map[string]lastReconcile, n)
		c.lastPeak = max(c.lastPeak, n)
	}
}

// addPendingLocked records a change of key at rev, seen at now, that a
// reconcile must cover; c.mu is held.
func (c *Controller[T]) addPendingLocked(key string, rev int64, now time.Time) {
	p, ok := c.pending[key]
	if !ok {
		p = pendingChange{first: rev, latest: rev, since: c.mono(now)}
		if len(c.last) > 0 {
			_, p.reconciled = c.last[key]
		}
	} else {
		p.latest = max(p.latest, rev)
		if p.inflight {
			p.touched = true
			if rev > p.covering && p.next == 0 {
				p.next, p.nextSince = rev, c.mono(now)
			}
		}
	}
	setKey(c.pending, &c.pendingPeak, key, p)
}

// forgetPendingLocked deletes key's pending changes, and forgetLastLocked
// its last reconcile; c.mu is held. Go maps never give memory back: once
// a map has fallen to an eighth of its peak, it is rebuilt at its size,
// so that the memory of a burst (an initial list of a million keys)
// returns to the heap once it has converged.
func (c *Controller[T]) forgetPendingLocked(key string) {
	forgetKey(&c.pending, &c.pendingPeak, key)
}

func (c *Controller[T]) forgetLastLocked(key string) {
	if c.last[key].failed {
		c.forgetLastErrLocked(key)
	}
	forgetKey(&c.last, &c.lastPeak, key)
}

// forgetLastErrLocked deletes key's last error text; c.mu is held.
func (c *Controller[T]) forgetLastErrLocked(key string) {
	forgetKey(&c.lastErr, &c.lastErrPeak, key)
}

// addChunk is how many keys observe queues under one acquisition of the
// queue's lock: enough to pay the lock once for many keys, few enough that
// Gets wait only microseconds behind a large list.
const addChunk = 128

// shrinkAbove is the peak size of a per-key map above which it is rebuilt
// once it falls to an eighth of its peak.
const shrinkAbove = 4096

// shrunk returns m, or a copy of m sized to its entries once they have
// fallen to an eighth of *peak (then the new peak).
func shrunk[V any](m map[string]V, peak *int) map[string]V {
	return mapshrink.Shrunk(m, peak, shrinkAbove)
}

// setKey sets m[key] to v and notes the map's peak size; forgetKey deletes
// key and rebuilds the map once it has fallen to an eighth of its peak.
// They serve the per-key maps that hold few keys most of the time and
// very many in a burst (an outage failing every key, a burst of writes or
// conflicts), so that the burst's memory goes back to the heap.
func setKey[V any](m map[string]V, peak *int, key string, v V) {
	m[key] = v
	mapshrink.Note(m, peak)
}

func forgetKey[V any](m *map[string]V, peak *int, key string) {
	delete(*m, key)
	*m = shrunk(*m, peak)
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

// Enqueue asks for key to be reconciled, as a source would. A key outside
// the controller's view (not a valid store key, or not under
// Options.Prefix) is refused, as one from a source is (see Health.Refused),
// with an error matching ErrInvalid; it is never reconciled.
func (c *Controller[T]) Enqueue(key string) error { return c.enqueue(key, trigEnqueued) }

// enqueue queues key from outside the cache, tagged with what woke it, or
// refuses it if it is outside the view.
func (c *Controller[T]) enqueue(key string, why trigger) error {
	return c.admitKey(key, queue.AddOptions{Tags: why})
}

// EnqueueAll asks for every cached key to be reconciled, at low priority,
// as a resync does.
//
// The keys are queued under the cache's read lock, so that no removal
// slips in between reading a key and queueing it: a key removed after
// being read would be reconciled again after its deletion was, without
// the last value.
func (c *Controller[T]) EnqueueAll() { c.enqueueAll(trigEnqueued) }

func (c *Controller[T]) enqueueAll(why trigger) {
	q := c.q()
	c.cache.eachKey(func(key string) {
		q.AddWith(key, queue.AddOptions{Priority: queue.PriorityLow, Tags: why})
	})
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
	var carried []queue.Item[string]
	if again {
		// The previous run's queue still holds the keys it had not handed
		// out, retries with their deadlines included: carry them over.
		carried = c.q().Snapshot()
		// Act on nothing older than this run: wait for a fresh list.
		c.queue.Store(c.newQueue())
		synced = c.cache.relist()
	}
	log := c.opts.Logger
	intake, stopIntake := context.WithCancel(ctx)
	var sources sync.WaitGroup
	sources.Go(func() { c.cache.run(intake) })
	for i, src := range c.opts.Sources {
		sources.Go(func() { c.runSource(intake, src, sourceTrigger(i)) })
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
		c.enqueueAll(trigListed)
		c.mu.Lock()
		unfinished := make([]string, 0, len(c.pending))
		for key := range c.pending {
			unfinished = append(unfinished, key)
		}
		c.mu.Unlock()
		q := c.q()
		for _, key := range unfinished {
			q.AddWith(key, queue.AddOptions{Tags: trigListed})
		}
		c.carryOver(carried)
	}
	log.Info("cache synced; starting workers", "workers", c.opts.Workers, "revision", c.cache.currentRevision())
	if c.opts.Shard != nil {
		cancel := c.opts.Shard.Subscribe(func(owns func(string) bool, rev int64) {
			sources.Go(func() { c.takeOver(intake, owns, rev) })
		})
		defer cancel()
	}

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
	term, _ := lock.FromContext(ctx)
	c.writer = newWriter(c, term)
	c.scaleLocked()
	c.workersMu.Unlock()

	<-ctx.Done()
	// No worker may start from here on (SetWorkers only records the count).
	c.workersMu.Lock()
	c.workers, c.workerCtx, c.reconCtx = nil, nil, nil
	c.workersMu.Unlock()
	stopIntake()
	// Stop the hand-outs, then let the reconciles in flight finish within
	// the grace period. Keys left in the queue stay there for the next
	// run's carry-over.
	q := c.q()
	q.ShutDown()
	grace, cancelGrace := context.WithTimeout(context.WithoutCancel(ctx), c.opts.GracePeriod)
	defer cancelGrace()
	if _, err := q.Drain(grace); err != nil {
		log.Warn("grace period over; cancelling in-flight reconciles", "grace", c.opts.GracePeriod)
		cancelReconciles()
	}
	c.workerWG.Wait()
	log.Info("stopped")
	return nil
}

// takeOver reconciles the cached keys of buckets this replica has just
// taken, once the cache reflects the store at the take's revision, so that
// the new owner acts on nothing older than the handover.
func (c *Controller[T]) takeOver(ctx context.Context, owns func(string) bool, rev int64) {
	if err := c.cache.waitRevision(ctx, rev); err != nil {
		return
	}
	q := c.q()
	c.cache.eachKey(func(key string) {
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
	var owed []string
	for key, r := range c.last {
		if !r.outcome().Settled() {
			owed = append(owed, key)
		}
	}
	c.mu.Unlock()
	for _, key := range owed {
		q.AddWith(key, queue.AddOptions{Tags: trigRetry})
	}
}

// runSource runs one source until intake ends, restarting it after errors.
func (c *Controller[T]) runSource(ctx context.Context, src Source, tag trigger) {
	failures := 0
	enqueue := func(key string) { _ = c.enqueue(key, tag) } // a refusal is logged and counted
	for {
		var err error
		if cs, ok := src.(controllerSource); ok {
			err = cs.startFor(ctx, enqueue, c.opts.Logger, c.opts.HeartbeatInterval)
		} else {
			err = src.Start(ctx, enqueue)
		}
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
		c.enqueueAll(trigResync)
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
		reconCtx, q, w := c.reconCtx, c.q(), c.writer
		c.workerWG.Go(func() { c.work(ctx, reconCtx, q, w) })
	}
	for len(c.workers) > c.wantWorker {
		n := len(c.workers) - 1
		c.workers[n]()
		c.workers = c.workers[:n]
	}
}

// work takes keys until ctx ends or the queue shuts down; reconciles run
// on reconCtx.
func (c *Controller[T]) work(ctx, reconCtx context.Context, q *queue.Queue[string], w *writer[T]) {
	if c.batch != nil {
		c.workBatches(ctx, reconCtx, q, w)
		return
	}
	var ctxs contextChunk
	for {
		key, why, err := q.GetTagged(ctx)
		if err != nil {
			return
		}
		c.process(reconCtx, q, w, &ctxs, key, why)
		q.Done(key)
	}
}
