package queue

import (
	"errors"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/converge-go/converge/internal/invalid"
	"github.com/converge-go/converge/internal/nilness"
)

// Errors of package queue. Test for them with errors.Is.
var (
	// ErrShutDown is returned by Get once the queue has been shut down, or,
	// during a Drain, once nothing is left to hand out: no key is ready and
	// no key in flight was marked dirty. While a dirty key is in flight, Get
	// waits for it to be Done and hands it out again.
	ErrShutDown = errors.New("queue: shut down")
	// ErrInvalid: bad input (a nil context).
	// errors.Is matches it with the ErrInvalid of every converge package.
	ErrInvalid error = invalid.New("queue")
)

// Priorities for AddOptions.Priority. Any int works; these name the common
// levels. A controller's initial list and resyncs go in at PriorityLow, so
// that live changes overtake them.
const (
	PriorityLow    = -1
	PriorityNormal = 0
	PriorityHigh   = 1
)

// DefaultAgingAfter is Options.AgingAfter's default: a waiting key gains one
// priority level for every 1,000 keys handed out while it waits.
const DefaultAgingAfter = 1000

// Options configure a Queue. The zero Options is valid.
type Options[K comparable] struct {
	// RateLimiter computes the delays of rate-limited adds
	// (AddOptions.RateLimited). Nil means DefaultRateLimiter.
	RateLimiter RateLimiter[K]
	// Metrics receives the queue's measurements. Nil means none, at no cost.
	Metrics Metrics
	// AgingAfter is how many keys may be handed out while a key waits
	// before it gains one priority level, so that low-priority keys are not
	// starved: a key of priority p waits behind at most (q−p)×AgingAfter
	// hand-outs of keys of priority q that became ready after it. Aging
	// counts hand-outs, not time, so ordering never reads the clock and is
	// the same on a loaded machine as on an idle one. Zero means
	// DefaultAgingAfter; a negative value disables aging (strict priority
	// order, FIFO within a priority).
	AgingAfter int
}

// AddOptions qualify an add. The zero value is a plain Add.
type AddOptions struct {
	// Priority orders ready keys: higher first. When a key is added several
	// times before it is handed out, it keeps the highest priority asked.
	// A priority outside the 32-bit range counts as the nearest end of it.
	Priority int
	// After delays the key: it becomes ready no sooner than After from now.
	After time.Duration
	// RateLimited adds the RateLimiter's delay for the key (and counts a
	// requeue); if After is also set, the longer delay wins.
	RateLimited bool
	// Tags are bits the caller attaches to the add, such as what woke the
	// key. The tags of adds that coalesce into one hand-out are ORed;
	// GetBatch hands them out with the key and View.Snapshot shows those
	// not yet handed out. The queue gives them no meaning.
	Tags uint32
	// Hint is a number the caller keeps with the key until its hand-out,
	// such as where the caller holds its own record of the key, so that
	// the consumer can find that record without a lookup. A nonzero Hint
	// replaces the key's; GetBatch hands the latest out with the key and
	// clears it. Zero is none. The queue gives it no
	// meaning, and a consumer must check it (a hint may be stale).
	Hint uint32
}

// Queue is a deduplicating work queue of keys of type K. Create one with New;
// the zero Queue is ready to use, as New(Options[K]{}) would make it. All
// methods are safe for concurrent use. See the package documentation for the
// guarantees.
type Queue[K comparable] struct {
	mu     sync.Mutex
	inited atomic.Bool // set once the fields below are initialised
	items  index[K]
	peak   int // high-water mark of items.len() since the index was rebuilt
	// forgets counts the records forgotten since the index was last
	// rebuilt, rebuilds how many times it was rebuilt after growing again,
	// and rebuiltAt its size then: each rebuild after a new burst waits
	// for twice as many forgets as the one before (see forgetItem).
	forgets   uint64
	rebuilds  uint
	rebuiltAt int
	free      []*item[K]
	ready     readyQueue[K]
	delayed   itemHeap[K]
	seq       uint64 // orders delays that share a deadline

	procs []*item[K] // keys handed out and not Done, in no particular order
	dirty int        // processing keys that were added again

	waiters     []chan struct{}
	freeWaiters []chan struct{}
	// toWake holds the Gets that makeReady chose to wake (the first
	// nWake); they are woken by unlockAndWake once q.mu is released.
	toWake [wakeAfterUnlock]chan struct{}
	nWake  int

	timer   *time.Timer
	timerAt int64 // deadline the timer is armed for; 0 when disarmed

	epoch   time.Time
	aging   int64  // hand-outs per priority level; 0 when aging is off
	handed  uint64 // keys handed out so far: the aging clock
	limiter RateLimiter[K]
	metrics Metrics
	due     DueMetrics // metrics, if it implements DueMetrics

	shuttingDown bool          // adds are refused
	draining     bool          // Get still hands out ready keys
	closed       chan struct{} // closed when Get stops handing out keys
	drained      chan struct{} // closed by the last Done of a drain
}

// New returns an empty queue configured by opts. A nil RateLimiter or
// Metrics, or a nil pointer in either, counts as not configured.
func New[K comparable](opts Options[K]) *Queue[K] {
	q := new(Queue[K])
	q.setup(opts)
	return q
}

// setup initialises a queue. It runs once, from New or from lazyInit.
func (q *Queue[K]) setup(opts Options[K]) {
	q.items.seed = maphash.MakeSeed()
	q.epoch = time.Now()
	q.closed = make(chan struct{})
	q.drained = make(chan struct{})
	q.ready.byPriority = opts.AgingAfter < 0
	q.limiter = opts.RateLimiter
	if nilness.Is(q.limiter) {
		q.limiter = DefaultRateLimiter[K]()
	}
	if !nilness.Is(opts.Metrics) {
		q.metrics = opts.Metrics
		q.due, _ = opts.Metrics.(DueMetrics)
		if p, ok := opts.Metrics.(ProbeMetrics); ok {
			p.Attach(q.View())
		}
	}
	switch {
	case opts.AgingAfter == 0:
		q.aging = DefaultAgingAfter
	case opts.AgingAfter > 0:
		q.aging = int64(opts.AgingAfter)
	}
	q.inited.Store(true)
}

// lazyInit makes a zero Queue one that New(Options[K]{}) would return. q.mu
// is held.
func (q *Queue[K]) lazyInit() {
	if q.closed == nil {
		q.setup(Options[K]{})
	}
}

// rateLimiter returns the queue's RateLimiter, initialising a zero Queue.
func (q *Queue[K]) rateLimiter() RateLimiter[K] {
	if !q.inited.Load() {
		q.mu.Lock()
		q.lazyInit()
		q.mu.Unlock()
	}
	return q.limiter
}

// now returns the queue's monotonic clock: nanoseconds since New.
func (q *Queue[K]) now() int64 { return int64(time.Since(q.epoch)) }

// Remove cancels key's queued work: a waiting or delayed key is dropped and
// a processing key loses its dirty mark and delay, so it is not handed out
// again after Done (the in-flight work itself finishes normally). The key's
// backoff is kept; call Forget to reset it.
func (q *Queue[K]) Remove(key K) {
	q.mu.Lock()
	defer q.mu.Unlock()
	it, h := q.items.find(key)
	if it == nil {
		return
	}
	if it.delayed() {
		q.delayed.remove(int(it.delayIdx))
		q.rearm()
	}
	if it.dirty {
		it.dirty = false
		q.dirty--
	}
	if it.waiting {
		q.ready.remove(it)
		if q.metrics != nil {
			q.metrics.Depth(q.ready.Len())
		}
	}
	it.tags, it.hint = 0, 0
	if !it.processing {
		q.forgetItem(it, h)
	}
	q.checkDrained()
}

// Forget resets key's backoff in the RateLimiter; call it when the key was
// handled successfully.
func (q *Queue[K]) Forget(key K) { q.rateLimiter().Forget(key) }
