package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/converge-go/converge/internal/mapshrink"
)

// Get hands out the next ready key, blocking until there is one. It returns
// ctx's error if ctx ends first (or had already ended), and ErrShutDown once
// the queue is shut down (see ErrShutDown for a drain). The caller must call
// Done(key) when finished. A nil ctx is refused with an error matching
// ErrInvalid. GetBatch hands keys out with the tags and hint of their adds.
func (q *Queue[K]) Get(ctx context.Context) (K, error) {
	h, err := q.get(ctx)
	return h.Key, err
}

// get is Get that returns the whole hand-out (see Handout): every hand-out,
// single or batched, starts here. Its tags and hint are cleared in the
// key's record, so that adds made while the key is processing attach theirs
// to its next hand-out.
func (q *Queue[K]) get(ctx context.Context) (Handout[K], error) {
	var zero Handout[K]
	if ctx == nil {
		return zero, fmt.Errorf("%w: Get with a nil context", ErrInvalid)
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
	if q.closed == nil {
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
			return zero, err
		}
		if q.ready.Len() > 0 && (!q.shuttingDown || q.draining) {
			h := q.take(now)
			q.checkDrained() // the last ready key of a drain frees idle Gets
			q.mu.Unlock()
			return h, nil
		}
		if q.shuttingDown && (!q.draining || q.dirty == 0) {
			q.mu.Unlock()
			return zero, ErrShutDown
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

// take hands out the first ready key, with its tags and hint, at time now.
// q.mu is held.
func (q *Queue[K]) take(now int64) Handout[K] {
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
	h := Handout[K]{Key: it.key, Tags: it.tags, Hint: it.hint}
	it.tags, it.hint = 0, 0
	return h
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
	it, h := q.items.find(key)
	if it == nil || !it.processing {
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
		q.forgetItem(it, h)
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
	if c := cap(q.procs); c > mapshrink.Floor && last < c/8 {
		q.procs = append(make([]*item[K], 0, 2*last), q.procs...)
	}
}
