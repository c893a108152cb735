package reconcile

import (
	"time"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile/internal/cache"
)

// change is one change of the cache (cache.Change), as observe, the
// ledger and the predicates see it.
type change[T any] = cache.Change[T]

// observe is the cache's change callback: it records a batch's changes in
// the ledger under one lock, then queues their keys. Predicates run before,
// outside the lock. The cache keeps the tombstone of every removed key, so
// a Deleted request always carries the last value; a deletion that no
// predicate lets through and nothing waits for needs none.
func (c *Controller[T]) observe(changes []change[T]) {
	rulings := c.rulings[:0]
	for i := range changes {
		v := drop
		if c.admit(&changes[i]) {
			v = keep
		}
		rulings = append(rulings, ruling{verdict: v})
	}
	var unwanted []int // deletions nothing will reconcile: their tombstones can go
	c.mu.Lock()
	led := c.led
	now := led.mono(time.Now()) // when observe saw the batch
	led.batchObserved(changes)
	for i := range changes {
		ch := &changes[i]
		led.deletionSeen(ch.Key(), ch.HasCur && c.markedDeleting(ch.Cur), now)
		r := &rulings[i]
		var gone bool
		r.verdict, r.hint, gone = led.changeObserved(ch, r.verdict == keep, now)
		if c.opts.Tracer != nil && c.batch == nil && r.verdict == keep && (ch.Cause != "" || !ch.Initial) {
			// A listed object has no cause to tell: its revision is the
			// reconcile's own. ReconcileBatch calls are not traced, so
			// nothing would cover a cause.
			led.causeSeen(ch.Key(), ch.Revision(), ch.Cause, now)
		}
		if gone {
			unwanted = append(unwanted, i)
		}
	}
	// Queue under c.mu, so that a finishing reconcile, which asks the
	// queue under c.mu whether its key will be handed out again, sees
	// these adds (lock order: c.mu, then the queue's, then the cache's).
	q := c.q()
	c.queueChanges(q, changes, rulings)
	for _, i := range unwanted {
		if key := changes[i].Key(); !q.View().Queued(key) {
			// Nothing will hand the key out again; if something will, that
			// request carries the tombstone and its end lets it go.
			c.cache.ForgetTombstone(key, changes[i].Revision())
		}
	}
	c.mu.Unlock()
	c.rulings = rulings[:0]
}

// ruling is what observe makes of one change: its verdict and, for a kept
// change, the hint of its key's ledger record, which the queue hands out
// with the key.
type ruling struct {
	verdict verdict
	hint    uint32
}

// queueChanges queues the keys of the changes that are not dropped, by
// AddBatch: one lock of the queue per addChunk keys. c.mu is held.
func (c *Controller[T]) queueChanges(q *queue.Queue[string], changes []change[T], rulings []ruling) {
	adds := c.adds[:0]
	for i := range changes {
		if rulings[i].verdict == drop {
			continue
		}
		prio := queue.PriorityNormal
		if changes[i].Initial {
			prio = queue.PriorityLow
		}
		adds = append(adds, queue.BatchAdd[string]{Key: changes[i].Key(), Options: queue.AddOptions{
			Priority: prio, Tags: changeTrigger(&changes[i]), Hint: rulings[i].hint,
		}})
		if len(adds) == addChunk {
			q.AddBatch(adds)
			adds = adds[:0]
		}
	}
	q.AddBatch(adds)
	clear(adds[:cap(adds)]) // the buffer outlives the batch: drop its keys
	c.adds = adds[:0]
}

// addChunk is how many keys observe queues under one acquisition of the
// queue's lock: enough to pay the lock once for many keys, few enough that
// Gets wait only microseconds behind a large list.
const addChunk = 128

// admit reports whether every predicate lets the change through. A change
// that leaves its object marked for deletion always goes through: no
// predicate may keep a cleanup from running.
func (c *Controller[T]) admit(ch *change[T]) bool {
	if len(c.opts.Predicates) == 0 || ch.HasCur && c.markedDeleting(ch.Cur) {
		return true
	}
	old, cur := ch.Pointers()
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
	c.cache.EachKey(func(key string) {
		q.AddWith(key, queue.AddOptions{Priority: queue.PriorityLow, Tags: why})
	})
}
