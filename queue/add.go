package queue

import (
	"math"
	"time"
)

// Add makes key ready now. It is a no-op if the key is already waiting; a
// processing key is marked dirty and handed out again after Done; a delayed
// key is made ready now and its delay cancelled. Adds after ShutDown or
// during Drain are ignored.
func (q *Queue[K]) Add(key K) { q.AddWith(key, AddOptions{}) }

// AddWith adds key with the given options: as Add does, at a priority
// (Priority), after a delay (After: a key that already has an earlier
// deadline, or is already waiting or dirty, keeps it), after the delay the
// RateLimiter gives it (RateLimited: it grows with every such add until
// Forget), with tags and a hint for its hand-out (Tags, Hint).
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
	prio := clampPriority(o.Priority)
	it, h := q.items.find(key)
	if it == nil {
		it = q.newItem(key, prio, h)
	} else if it.queued() {
		q.setPriority(it, max(it.priority, prio))
	} else {
		it.priority = prio
	}
	it.tags |= o.Tags
	if o.Hint != 0 {
		it.hint = o.Hint
	}
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
		q.due.Due(int(it.priority))
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
func (q *Queue[K]) offset(priority int32) int64 {
	if q.aging == 0 {
		return 0
	}
	return saturatingMul(int64(priority), q.aging)
}

// setPriority changes a queued key's priority. A waiting key moves to the
// back of its new priority's line, as if it had just become ready.
func (q *Queue[K]) setPriority(it *item[K], priority int32) {
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

// clampPriority holds p in the 32 bits a key's record keeps of it.
func clampPriority(p int) int32 {
	return int32(min(max(p, math.MinInt32), math.MaxInt32))
}
