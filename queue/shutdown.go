package queue

import (
	"context"
)

// ShutDown stops the queue at once: every blocked Get returns ErrShutDown,
// later Gets too, and later adds are ignored. Keys still waiting or delayed
// are not handed out; Drain (or Snapshot) reports them. Keys in flight may
// still be marked Done. ShutDown is idempotent.
func (q *Queue[K]) ShutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
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
}

// Drain shuts the queue down gracefully. It refuses new adds at once, lets
// workers Get every key that is ready (including keys that become ready
// because they were marked dirty before the drain began), waits until every
// key in flight is Done, and then stops the queue as ShutDown does. Delayed
// keys are not waited for.
//
// If ctx ends first, Drain stops the queue there. Either way it returns every
// key it had to leave behind: keys still waiting or delayed, and keys still
// in flight when ctx ended, so nothing is dropped silently. A nil result
// means everything was handed out and finished.
func (q *Queue[K]) Drain(ctx context.Context) []K {
	q.mu.Lock()
	if !q.shuttingDown {
		q.shuttingDown = true
		q.draining = true
		if q.timer != nil {
			q.timer.Stop()
			q.timerAt = 0
		}
		q.wakeAll() // waiters re-check: some may now have nothing to wait for
		q.checkDrained()
	}
	draining := q.draining
	q.mu.Unlock()

	if draining {
		select {
		case <-q.drained:
		case <-ctx.Done():
		}
	}

	q.mu.Lock()
	defer q.mu.Unlock()
	q.stop()
	return q.leftBehind()
}

// checkDrained closes q.drained once nothing is ready or in flight. q.mu is
// held.
func (q *Queue[K]) checkDrained() {
	if q.ready.Len() > 0 || q.processing > 0 {
		if q.dirty == 0 && q.processing > 0 && q.ready.Len() == 0 {
			// Gets blocked in drain mode have nothing more to wait for.
			q.wakeAll()
		}
		return
	}
	select {
	case <-q.drained:
	default:
		close(q.drained)
	}
	q.wakeAll()
}

// leftBehind lists the keys still waiting (in hand-out order), then those
// delayed (by deadline), then those in flight. q.mu is held.
func (q *Queue[K]) leftBehind() []K {
	if len(q.items) == 0 {
		return nil
	}
	keys := make([]K, 0, len(q.items))
	for _, it := range q.sortedItems() {
		keys = append(keys, it.key)
	}
	return keys
}
