package queue

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
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
	// RateLimiter computes AddRateLimited's delays. Nil means
	// DefaultRateLimiter.
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
	Priority int
	// After delays the key: it becomes ready no sooner than After from now.
	After time.Duration
	// RateLimited adds the RateLimiter's delay for the key (and counts a
	// requeue); if After is also set, the longer delay wins.
	RateLimited bool
	// Tags are bits the caller attaches to the add, such as what woke the
	// key. The tags of adds that coalesce into one hand-out are ORed;
	// GetTagged hands them out with the key and Snapshot shows those
	// pending. The queue gives them no meaning.
	Tags uint32
}

// Queue is a deduplicating work queue of keys of type K. Create one with New;
// the zero Queue is ready to use, as New(Options[K]{}) would make it. All
// methods are safe for concurrent use. See the package documentation for the
// guarantees.
type Queue[K comparable] struct {
	mu     sync.Mutex
	inited atomic.Bool // set once the fields below are initialised
	items  map[K]*item[K]
	peak   int // high-water mark of len(items) since the map was made
	// forgets counts the records forgotten since the map was last rebuilt,
	// rebuilds how many times it was rebuilt after growing again, and
	// rebuiltAt its size then: each rebuild after a new burst waits for
	// twice as many forgets as the one before (see forgetItem).
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

// item is the queue's record of one key. It exists while the key is
// waiting, delayed or processing, and is recycled afterwards.
//
// It is kept small (64 bytes for string keys): a key is never waiting and
// processing at once, so one field holds the virtual time of a waiting key
// and the start time of a processing one.
type item[K comparable] struct {
	key K
	// pos is, while waiting, the key's absolute position in its priority's
	// ring; while delayed, the order of its delay among equal deadlines.
	pos uint64
	// at is, while waiting, the key's virtual position: the hand-out count
	// when it became ready minus its priority's aging offset (see offset);
	// while processing, the time it was handed out (ns since the epoch).
	at int64
	// deadline is, while delayed, when the key becomes ready (ns since the
	// epoch); while waiting, with Metrics configured, when it became ready.
	deadline   int64
	priority   int
	delayIdx   int32  // position in the delay heap, or -1
	procIdx    int32  // while processing, position in Queue.procs
	tags       uint32 // ORed AddOptions.Tags of the adds not yet handed out
	waiting    bool   // in the ready queue
	processing bool
	dirty      bool // added while processing: ready again at Done
}

func (it *item[K]) delayed() bool { return it.delayIdx >= 0 }

// pending reports whether the key will be handed out again: it is waiting,
// delayed or dirty.
func (it *item[K]) pending() bool { return it.waiting || it.delayed() || it.dirty }

// New returns an empty queue configured by opts. A nil RateLimiter or
// Metrics, or a nil pointer in either, counts as not configured.
func New[K comparable](opts Options[K]) *Queue[K] {
	q := new(Queue[K])
	q.setup(opts)
	return q
}

// setup initialises a queue. It runs once, from New or from lazyInit.
func (q *Queue[K]) setup(opts Options[K]) {
	q.items = make(map[K]*item[K])
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
			p.Attach(q)
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
	if q.items == nil {
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

// Add makes key ready now. It is a no-op if the key is already waiting; a
// processing key is marked dirty and handed out again after Done; a delayed
// key is made ready now and its delay cancelled. Adds after ShutDown or
// during Drain are ignored.
func (q *Queue[K]) Add(key K) { q.AddWith(key, AddOptions{}) }

// AddAfter makes key ready after delay d (at once if d <= 0). A key that
// already has an earlier deadline, or is already waiting or dirty, keeps it.
func (q *Queue[K]) AddAfter(key K, d time.Duration) { q.AddWith(key, AddOptions{After: d}) }

// AddRateLimited adds key after the delay the RateLimiter gives it, which
// grows with every call until Forget.
func (q *Queue[K]) AddRateLimited(key K) { q.AddWith(key, AddOptions{RateLimited: true}) }

// AddWith adds key with the given options.
func (q *Queue[K]) AddWith(key K, o AddOptions) {
	delay := o.After
	if o.RateLimited {
		// The limiter has its own lock; ask it before taking ours.
		if d := q.rateLimiter().When(key); d > delay {
			delay = d
		}
		if q.metrics != nil {
			q.metrics.Retried()
		}
	}
	// Read the clock before taking the lock, so that the lock is held for
	// less time under contention: the deadline counts from the call, not
	// from when the lock was won.
	var now int64
	timed := delay > 0 && q.inited.Load()
	if timed {
		now = q.now()
	}
	q.mu.Lock()
	defer q.unlockAndWake()
	q.lazyInit()
	if delay > 0 && !timed {
		now = q.now() // a zero Queue's epoch was set just now
	}
	q.addLocked(key, o, delay, now)
}

// addLocked is AddWith once the rate limiter was asked (delay is the
// longer of o.After and its answer) and the lock taken; now is the clock
// when delay > 0. q.mu is held.
func (q *Queue[K]) addLocked(key K, o AddOptions, delay time.Duration, now int64) {
	if q.shuttingDown {
		return
	}
	if q.metrics != nil {
		q.metrics.Added()
	}
	if q.due != nil && delay > 0 {
		q.due.Delayed()
	}
	it, ok := q.items[key]
	if !ok {
		it = q.newItem(key, o.Priority)
	} else if it.pending() {
		q.setPriority(it, max(it.priority, o.Priority))
	} else {
		it.priority = o.Priority
	}
	it.tags |= o.Tags
	if delay <= 0 {
		q.addNow(it)
		return
	}
	q.addDelayed(it, delay, now)
}

// addNow makes the key ready, or dirty if it is processing.
func (q *Queue[K]) addNow(it *item[K]) {
	if it.delayed() {
		q.delayed.remove(int(it.delayIdx))
		q.rearm()
	}
	switch {
	case it.processing:
		if !it.dirty {
			it.dirty = true
			q.dirty++
			q.becameDue(it)
		}
	case it.waiting:
		// Already ready; a raised priority was applied by setPriority.
	default:
		q.makeReady(it)
		q.becameDue(it)
	}
}

// addDelayed sets or advances the key's deadline.
func (q *Queue[K]) addDelayed(it *item[K], delay time.Duration, now int64) {
	if it.waiting || it.dirty {
		return // it will be handed out sooner than the delay
	}
	// Saturate: a delay of "forever" must not wrap around to the past.
	deadline := int64(maxDeadline)
	if int64(delay) < maxDeadline-now {
		deadline = now + int64(delay)
	}
	if it.delayed() {
		if deadline >= it.deadline {
			return
		}
		it.deadline = deadline
		q.delayed.fix(int(it.delayIdx))
	} else {
		it.deadline = deadline
		q.seq++
		it.pos = q.seq
		q.delayed.push(it)
	}
	if q.timerAt == 0 || deadline < q.timerAt {
		q.arm(deadline, now)
	}
}

// becameDue reports a key that became due to DueMetrics. q.mu is held.
func (q *Queue[K]) becameDue(it *item[K]) {
	if q.due != nil {
		q.due.Due(it.priority)
	}
}

// makeReady puts a key that is neither waiting nor processing in the ready
// queue and wakes one waiting Get. It reads the clock only for Metrics.
func (q *Queue[K]) makeReady(it *item[K]) {
	it.at = int64(q.handed) - q.offset(it.priority)
	q.ready.push(it)
	if q.metrics != nil {
		it.deadline = q.now()
		q.metrics.Depth(q.ready.Len())
	}
	if len(q.waiters) > 0 {
		w := q.popWaiter()
		if q.nWake == len(q.toWake) {
			w <- struct{}{} // very many keys in one critical section
			return
		}
		q.toWake[q.nWake] = w
		q.nWake++
	}
}

// wakeAfterUnlock is how many Gets one critical section wakes after it
// releases the lock: a timer firing for many due keys wakes that many
// workers without making them wait for the lock it still holds. Beyond
// that, the others are woken at once.
const wakeAfterUnlock = 16

// unlockAndWake releases q.mu, then wakes the Gets that makeReady chose, so
// that the woken Gets do not run into a lock their waker still holds. Every
// method that may call makeReady unlocks through it.
func (q *Queue[K]) unlockAndWake() {
	if q.nWake == 0 {
		q.mu.Unlock()
		return
	}
	var wake [wakeAfterUnlock]chan struct{}
	n := copy(wake[:], q.toWake[:q.nWake])
	clear(q.toWake[:q.nWake])
	q.nWake = 0
	q.mu.Unlock()
	for _, w := range wake[:n] {
		w <- struct{}{}
	}
}

// offset is how much earlier than its ready position a key of this priority
// is placed: priority × AgingAfter hand-outs. Ordering ready keys by
// virtual position (hand-outs when ready − offset) serves higher priorities
// first, FIFO within a priority, and lets a key that has waited through
// enough hand-outs overtake newer keys of higher priority. Without aging
// the offset is 0, and the ready queue orders by priority first.
func (q *Queue[K]) offset(priority int) int64 {
	if q.aging == 0 {
		return 0
	}
	return saturatingMul(int64(priority), q.aging)
}

// setPriority changes a pending key's priority. A waiting key moves to the
// back of its new priority's line, as if it had just become ready.
func (q *Queue[K]) setPriority(it *item[K], priority int) {
	if priority == it.priority {
		return
	}
	if !it.waiting {
		it.priority = priority
		return
	}
	q.ready.remove(it)
	it.priority = priority
	it.at = int64(q.handed) - q.offset(priority)
	q.ready.push(it)
}

func saturatingMul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	p := a * b
	if p/b != a {
		if (a < 0) != (b < 0) {
			return math.MinInt64 / 2
		}
		return math.MaxInt64 / 2
	}
	// Keep headroom so that a time minus p cannot overflow.
	return min(max(p, math.MinInt64/2), math.MaxInt64/2)
}

func (q *Queue[K]) newItem(key K, priority int) *item[K] {
	var it *item[K]
	if n := len(q.free); n > 0 {
		it = q.free[n-1]
		q.free[n-1] = nil
		q.free = q.free[:n-1]
	} else {
		// Records come in chunks: a burst of new keys (an initial list)
		// allocates once per itemChunk keys, not once per key. The spare
		// ones go to the free list, which is empty here.
		chunk := make([]item[K], itemChunk)
		for i := len(chunk) - 1; i > 0; i-- {
			q.free = append(q.free, &chunk[i])
		}
		it = &chunk[0]
	}
	*it = item[K]{key: key, priority: priority, delayIdx: -1}
	q.items[key] = it
	q.peak = max(q.peak, len(q.items))
	return it
}

// forgetItem drops the record of a key that is no longer pending or
// processing.
func (q *Queue[K]) forgetItem(it *item[K]) {
	delete(q.items, it.key)
	var zero item[K]
	*it = zero
	// Keep records for reuse up to the high-water mark of live keys (at
	// least minFreeItems), so that keys coming and going allocate nothing.
	// The list is grown to that mark at once: as a burst drains it would
	// otherwise grow by doubling, several large allocations that cost a
	// tenth of the drain (S3's drain of 100,000 keys, 1 and 8 workers).
	// That holds 8 bytes per key of the peak from the burst's first Done
	// instead of as its keys finish; the rebuild below gives them back.
	if keep := max(minFreeItems, q.peak); len(q.free) < keep {
		if len(q.free) == cap(q.free) {
			q.free = slices.Grow(q.free, keep-len(q.free))
		}
		q.free = append(q.free, it)
	}
	// Maps do not shrink when emptied: once a large burst has drained,
	// rebuild the mostly empty map and trim the records kept for reuse, so
	// that their memory goes back to the heap. Smaller maps are kept as
	// they are, since rebuilding them would cost more than they hold.
	//
	// A burst has drained when the map has fallen to an eighth of its
	// peak, whatever keys it left behind (retries, keys in flight); the
	// rebuilt map can be rebuilt again as the rest drains (each time at
	// most an eighth of the one before). A queue whose bursts come back
	// again and again would regrow what it gave back each time: after a
	// map has grown again (to twice its size at the last rebuild), each
	// rebuild waits for twice as many forgotten records as the one before,
	// so that such a queue rebuilds a handful of times, not once per
	// burst.
	q.forgets++
	if q.peak <= mapShrinkThreshold || len(q.items) >= q.peak/8 {
		return
	}
	need := uint64(q.peak - q.peak/8)
	grown := q.peak > 2*q.rebuiltAt
	if grown {
		need <<= min(q.rebuilds, 32)
	}
	if q.forgets < need {
		return
	}
	if grown {
		q.rebuilds++
	}
	q.forgets = 0
	m := make(map[K]*item[K], len(q.items))
	for k, v := range q.items {
		m[k] = v
	}
	q.items = m
	q.peak = len(m)
	q.rebuiltAt = len(m)
	keep := max(minFreeItems, len(m))
	if len(q.free) > keep {
		clear(q.free[keep:])
		q.free = append([]*item[K](nil), q.free[:keep]...)
	}
}

// itemChunk is how many key records newItem allocates at once. A chunk is
// freed when none of its records is in use or kept for reuse; after a
// burst drains, the few kept for reuse pin at most that many chunks.
const itemChunk = 8

// mapShrinkThreshold is the high-water mark of keys above which the key map
// and the records kept for reuse are rebuilt small after a burst drains.
// At 4,096 keys the map and records hold about 0.4 MB: below that, keeping
// them costs less than rebuilding them for the next burst.
const mapShrinkThreshold = 1 << 12

// maxDeadline is the latest deadline the queue computes, with headroom so
// that deadline arithmetic cannot overflow.
const maxDeadline = math.MaxInt64 / 2

// minFreeItems is how many recycled records are kept for reuse even when
// few keys are live.
const minFreeItems = 1024

// Get hands out the next ready key, blocking until there is one. It returns
// ctx's error if ctx ends first (or had already ended), and ErrShutDown once
// the queue is shut down (see ErrShutDown for a drain). The caller must call
// Done(key) when finished. A nil ctx is refused with an error matching
// ErrInvalid.
func (q *Queue[K]) Get(ctx context.Context) (K, error) {
	key, _, err := q.GetTagged(ctx)
	return key, err
}

// GetTagged is Get that also returns the ORed AddOptions.Tags of the adds
// this hand-out answers; they are cleared, so that adds made while the key
// is processing tag its next hand-out.
func (q *Queue[K]) GetTagged(ctx context.Context) (K, uint32, error) {
	var zero K
	if ctx == nil {
		return zero, 0, fmt.Errorf("%w: Get with a nil context", ErrInvalid)
	}
	// The hand-out time is read before the lock is taken (and again after
	// each wait), so that the lock is held for less time under
	// contention: Since may be earlier than the hand-out by the time spent
	// winning the lock.
	var now int64
	if q.inited.Load() {
		now = q.now()
	}
	q.mu.Lock()
	if q.items == nil {
		q.lazyInit()
		now = q.now()
	}
	for {
		if err := ctx.Err(); err != nil {
			// This Get may have consumed a wake-up meant for a ready key:
			// pass it on so that the key does not wait for the next add.
			if q.ready.Len() > 0 {
				q.wakeOne()
			}
			q.mu.Unlock()
			return zero, 0, err
		}
		if q.ready.Len() > 0 && (!q.shuttingDown || q.draining) {
			key, tags := q.take(now)
			q.checkDrained() // the last ready key of a drain frees idle Gets
			q.mu.Unlock()
			return key, tags, nil
		}
		if q.shuttingDown && (!q.draining || q.dirty == 0) {
			q.mu.Unlock()
			return zero, 0, ErrShutDown
		}
		w := q.waiter()
		q.waiters = append(q.waiters, w)
		q.mu.Unlock()
		select {
		case <-w:
			now = q.now()
			q.mu.Lock()
		case <-ctx.Done():
			now = q.now()
			q.mu.Lock()
			q.cancelWait(w)
		case <-q.closed:
			now = q.now()
			q.mu.Lock()
			q.cancelWait(w)
		}
		q.freeWaiters = append(q.freeWaiters, w)
	}
}

// take hands out the first ready key and its tags at time now. q.mu is
// held.
func (q *Queue[K]) take(now int64) (K, uint32) {
	it := q.ready.pop()
	q.handed++
	if q.metrics != nil {
		q.metrics.Depth(q.ready.Len())
		q.metrics.QueueLatency(time.Duration(max(0, now-it.deadline))) // now may predate the lock
		it.deadline = 0
	}
	it.processing = true
	it.procIdx = int32(len(q.procs))
	q.procs = append(q.procs, it)
	it.at = now
	tags := it.tags
	it.tags = 0
	return it.key, tags
}

// waiter returns a wake-up channel for one Get. q.mu is held.
func (q *Queue[K]) waiter() chan struct{} {
	if n := len(q.freeWaiters); n > 0 {
		w := q.freeWaiters[n-1]
		q.freeWaiters = q.freeWaiters[:n-1]
		return w
	}
	return make(chan struct{}, 1)
}

// wakeOne wakes the longest-waiting Get. q.mu is held.
func (q *Queue[K]) wakeOne() {
	if len(q.waiters) > 0 {
		q.popWaiter() <- struct{}{}
	}
}

// popWaiter removes and returns the longest-waiting Get's channel; there
// must be one. q.mu is held.
func (q *Queue[K]) popWaiter() chan struct{} {
	w := q.waiters[0]
	copy(q.waiters, q.waiters[1:])
	q.waiters[len(q.waiters)-1] = nil
	q.waiters = q.waiters[:len(q.waiters)-1]
	return w
}

// wakeAll wakes every waiting Get so that it re-checks the queue's state.
func (q *Queue[K]) wakeAll() {
	for len(q.waiters) > 0 {
		q.wakeOne()
	}
}

// cancelWait withdraws a Get that stopped waiting for another reason. If it
// was woken meanwhile, the wake-up is passed on so that it is not lost.
// q.mu is held.
func (q *Queue[K]) cancelWait(w chan struct{}) {
	for i, x := range q.waiters {
		if x == w {
			q.waiters = append(q.waiters[:i], q.waiters[i+1:]...)
			return
		}
	}
	<-w
	q.wakeOne()
}

// Done marks key as finished. If it was added while processing, it is ready
// again now (or at its deadline); otherwise the queue forgets it. Done of a
// key that is not processing does nothing.
func (q *Queue[K]) Done(key K) {
	q.mu.Lock()
	defer q.unlockAndWake()
	it, ok := q.items[key]
	if !ok || !it.processing {
		return
	}
	it.processing = false
	q.dropProc(it)
	if q.metrics != nil {
		q.metrics.WorkDuration(time.Duration(q.now() - it.at))
	}
	switch {
	case it.dirty:
		it.dirty = false
		q.dirty--
		q.makeReady(it)
	case it.delayed():
		// Stays in the delay heap until its deadline.
	default:
		q.forgetItem(it)
	}
	q.checkDrained()
}

// dropProc takes a key that is no longer processing out of q.procs. q.mu
// is held.
func (q *Queue[K]) dropProc(it *item[K]) {
	last := len(q.procs) - 1
	if i := it.procIdx; int(i) != last {
		moved := q.procs[last]
		q.procs[i] = moved
		moved.procIdx = i
	}
	q.procs[last] = nil
	q.procs = q.procs[:last]
	if c := cap(q.procs); c > shrinkThreshold && last < c/8 {
		q.procs = append(make([]*item[K], 0, 2*last), q.procs...)
	}
}

// Queued reports whether key will be handed out (again): it is waiting,
// delayed, or processing and marked dirty. It is false for a key only
// processing, and for an unknown key.
func (q *Queue[K]) Queued(key K) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	it, ok := q.items[key]
	return ok && it.pending()
}

// Remove cancels key's pending work: a waiting or delayed key is dropped and
// a processing key loses its dirty mark and delay, so it is not handed out
// again after Done (the in-flight work itself finishes normally). The key's
// backoff is kept; call Forget to reset it.
func (q *Queue[K]) Remove(key K) {
	q.mu.Lock()
	defer q.mu.Unlock()
	it, ok := q.items[key]
	if !ok {
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
	it.tags = 0
	if !it.processing {
		q.forgetItem(it)
	}
	q.checkDrained()
}

// Forget resets key's backoff in the RateLimiter; call it when the key was
// handled successfully.
func (q *Queue[K]) Forget(key K) { q.rateLimiter().Forget(key) }

// NumRequeues reports how many times key has been rate-limited since the
// last Forget.
func (q *Queue[K]) NumRequeues(key K) int { return q.rateLimiter().NumRequeues(key) }

// Len reports the number of keys ready to be handed out (not delayed, not
// processing).
func (q *Queue[K]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.ready.Len()
}

// ShuttingDown reports whether ShutDown or Drain has been called.
func (q *Queue[K]) ShuttingDown() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.shuttingDown
}
