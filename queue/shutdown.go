package queue

import (
	"context"
	"fmt"
)

// ShutDown stops the queue at once: every blocked Get returns ErrShutDown,
// later Gets too, and later adds are ignored. Keys still waiting or delayed
// are not handed out; Drain (or View.Snapshot) reports them. Keys in flight may
// still be marked Done. ShutDown is idempotent.
//
// ShutDown during a Drain stops the hand-out of ready keys, but the Drain
// still waits for the keys in flight to be Done (or for its context), since
// its caller relies on no work running once it returns. This differs from
// client-go, whose ShutDown abandons a ShutDownWithDrain still waiting.
func (q *Queue[K]) ShutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.lazyInit()
	q.stop()
}

// stop ends hand-outs. q.mu is held.
func (q *Queue[K]) stop() {
	q.shuttingDown = true
	q.draining = false
	if q.timer != nil {
		q.timer.Stop()
		q.timerAt = 0
	}
	select {
	case <-q.closed:
	default:
		close(q.closed)
	}
	q.wakeAll()
	q.checkDrained()
}

// Drain shuts the queue down gracefully. It refuses new adds at once, lets
// workers Get every key that is ready, and every key in flight that was
// marked dirty before the drain began (Get waits for such a key to be Done
// and hands it out again), waits until every key in flight is Done, and
// then stops the queue as ShutDown does. Delayed keys are not waited for.
// A ShutDown during the drain stops the hand-outs, but Drain still waits for
// the keys in flight.
//
// If ctx ends first, Drain stops the queue there and returns ctx's cause
// (context.Cause); the error is nil when the drain finished. Either way it
// returns every key it had to leave behind: keys still waiting or delayed,
// and keys still in flight when ctx ended, so nothing is dropped silently.
// A nil slice means everything was handed out and finished.
//
// A nil ctx is refused with an error matching ErrInvalid, and the queue is
// left as it was.
func (q *Queue[K]) Drain(ctx context.Context) ([]K, error) {
	if ctx == nil {
		return nil, fmt.Errorf("%w: Drain with a nil context", ErrInvalid)
	}
	q.mu.Lock()
	q.lazyInit()
	if !q.shuttingDown {
		q.shuttingDown = true
		q.draining = true
		if q.timer != nil {
			q.timer.Stop()
			q.timerAt = 0
		}
		q.wakeAll() // waiters re-check: some may now have nothing to wait for
	}
	q.checkDrained()
	q.mu.Unlock()

	select {
	case <-q.drained:
	case <-ctx.Done():
	}

	q.mu.Lock()
	defer q.mu.Unlock()
	var err error
	select {
	case <-q.drained: // finished, even if ctx ended at the same moment
	default:
		err = context.Cause(ctx)
	}
	q.stop()
	return q.leftBehind(), err
}

// checkDrained closes q.drained once a queue that is shutting down has
// nothing left to hand out and nothing in flight: while draining, no key
// ready and none processing; once stopped, none processing. While
// draining, it also releases the Gets that wait for nothing: once no key is
// ready and no key in flight is dirty, nothing more can become ready. q.mu
// is held.
func (q *Queue[K]) checkDrained() {
	if !q.shuttingDown {
		return
	}
	if q.draining && q.ready.Len() == 0 && q.dirty == 0 {
		q.wakeAll()
	}
	if len(q.procs) > 0 || (q.draining && q.ready.Len() > 0) {
		return
	}
	select {
	case <-q.drained:
	default:
		close(q.drained)
	}
}

// leftBehind lists the keys still waiting (in hand-out order), then those
// delayed (by deadline), then those in flight. q.mu is held.
func (q *Queue[K]) leftBehind() []K {
	if q.items.len() == 0 {
		return nil
	}
	keys := make([]K, 0, q.items.len())
	for _, it := range q.sortedItems() {
		keys = append(keys, it.key)
	}
	return keys
}
