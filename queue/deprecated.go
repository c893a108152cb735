package queue

import (
	"context"
	"time"
)

// The names below are kept for one release after the Queue's methods were
// reduced to a core (adds, gets, Done, Forget, Remove, Grow, shutdown) and
// the inspection moved to View. Each does exactly what its replacement does.

// AddAfter makes key ready after delay d (at once if d <= 0).
//
// Deprecated: use AddWith(key, AddOptions{After: d}).
func (q *Queue[K]) AddAfter(key K, d time.Duration) { q.AddWith(key, AddOptions{After: d}) }

// AddRateLimited adds key after the delay the RateLimiter gives it.
//
// Deprecated: use AddWith(key, AddOptions{RateLimited: true}).
func (q *Queue[K]) AddRateLimited(key K) { q.AddWith(key, AddOptions{RateLimited: true}) }

// GetTagged is Get that also returns the ORed AddOptions.Tags of the adds
// this hand-out answers.
//
// Deprecated: use GetBatch with max 1; the Handout carries the tags.
func (q *Queue[K]) GetTagged(ctx context.Context) (K, uint32, error) {
	h, err := q.get(ctx)
	return h.Key, h.Tags, err
}

// GetHandout is Get that also returns the tags and hint of the adds this
// hand-out answers.
//
// Deprecated: use GetBatch with max 1.
func (q *Queue[K]) GetHandout(ctx context.Context) (Handout[K], error) { return q.get(ctx) }

// Len reports the number of keys ready to be handed out.
//
// Deprecated: use View().Len.
func (q *Queue[K]) Len() int { return q.View().Len() }

// ShuttingDown reports whether ShutDown or Drain has been called.
//
// Deprecated: use View().ShuttingDown.
func (q *Queue[K]) ShuttingDown() bool { return q.View().ShuttingDown() }

// Queued reports whether key will be handed out (again).
//
// Deprecated: use View().Queued.
func (q *Queue[K]) Queued(key K) bool { return q.View().Queued(key) }

// Retries reports key's retries since its last Forget.
//
// Deprecated: use View().Retries.
func (q *Queue[K]) Retries(key K) int { return q.View().Retries(key) }

// Stats summarises the queue.
//
// Deprecated: use View().Stats.
func (q *Queue[K]) Stats() Stats { return q.View().Stats() }

// DueByPriority counts, by priority, the keys that are due.
//
// Deprecated: use View().DueByPriority.
func (q *Queue[K]) DueByPriority(yield func(priority, n int)) { q.View().DueByPriority(yield) }

// Snapshot describes every key in the queue.
//
// Deprecated: use View().Snapshot.
func (q *Queue[K]) Snapshot() []Item[K] { return q.View().Snapshot() }

// States calls fn with every key in the queue and its state.
//
// Deprecated: use View().States.
func (q *Queue[K]) States(fn func(h Handout[K], s State)) { q.View().States(fn) }

// Describe returns key's Item, and false if key is not in the queue.
//
// Deprecated: use View().Describe.
func (q *Queue[K]) Describe(key K) (Item[K], bool) { return q.View().Describe(key) }

// Processing describes the keys handed out and not yet Done.
//
// Deprecated: use View().Processing.
func (q *Queue[K]) Processing() []Item[K] { return q.View().Processing() }

// Items describes every key in the queue as View().Snapshot does, but in no
// particular order and with Retries zero.
//
// Deprecated: use View().States to walk the keys without copying them,
// View().Snapshot for a copy in hand-out order.
func (q *Queue[K]) Items() []Item[K] {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]Item[K], 0, q.items.len())
	q.each(func(it *item[K], _ State) { out = append(out, q.describe(it)) })
	return out
}
