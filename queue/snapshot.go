package queue

import (
	"cmp"
	"slices"
	"time"
)

// State is where a key is in the queue.
type State uint8

const (
	// Waiting: ready, to be handed out by Get.
	Waiting State = iota + 1
	// Delayed: ready at Item.Until.
	Delayed
	// Processing: handed out at Item.Since, not yet Done.
	Processing
)

func (s State) String() string {
	switch s {
	case Waiting:
		return "waiting"
	case Delayed:
		return "delayed"
	case Processing:
		return "processing"
	}
	return "unknown"
}

// Item describes one key, as View.Snapshot, Describe and Processing list it.
type Item[K comparable] struct {
	Key   K
	State State
	// Dirty: a processing key that was added again; it is handed out again
	// after Done.
	Dirty bool
	// Since is when a processing key was handed out: the clock is read
	// as Get takes the queue's lock, so it may precede the hand-out by the
	// time that Get waited for the lock.
	Since time.Time
	// Until is when a delayed key becomes ready. A processing key may also
	// have a deadline, for the add that comes due after Done.
	Until time.Time
	// Priority is the priority of the key's next hand-out.
	Priority int
	// Retries is the key's retries since its last Forget (its
	// RateLimiter's NumRequeues).
	Retries int
	// Tags are the ORed AddOptions.Tags of the adds not yet handed out.
	Tags uint32
}

// Snapshot describes every key in the queue: waiting keys in hand-out order,
// then delayed keys by deadline, then processing keys by start time. It
// holds the queue's lock while it copies, for O(n log n) in the number of
// keys, then asks the RateLimiter for each key's retries after
// releasing it: cheap enough for a debug page, not for a hot path.
func (v View[K]) Snapshot() []Item[K] {
	q := v.queue()
	q.mu.Lock()
	sorted := q.sortedItems()
	out := make([]Item[K], len(sorted))
	for i, it := range sorted {
		out[i] = q.describe(it)
	}
	q.mu.Unlock()
	for i := range out {
		out[i].Retries = q.rateLimiter().NumRequeues(out[i].Key)
	}
	return out
}

// States calls fn with every key in the queue and its state, in no
// particular order, while it holds the queue's lock: fn must be quick and
// must not call the queue (nor wait for anything that does). It copies
// nothing, for a caller that selects a few keys among very many (a debug
// page) and then asks Describe for those. Each key comes as its next
// hand-out would (Handout): with the tags and hint of the adds not yet
// handed out.
func (v View[K]) States(fn func(h Handout[K], s State)) {
	q := v.queue()
	q.mu.Lock()
	defer q.mu.Unlock()
	q.each(func(it *item[K], s State) { fn(Handout[K]{Key: it.key, Tags: it.tags, Hint: it.hint}, s) })
}

// each calls fn with every key in the queue and its state: the waiting
// keys in each priority's FIFO order, then the delayed ones, then those
// processing. It walks the ready rings, the delay heap and the processing
// list rather than the index, so that a walk over a large burst reads
// the records in the order they were allocated. q.mu is held.
func (q *Queue[K]) each(fn func(it *item[K], s State)) {
	q.ready.each(func(it *item[K]) { fn(it, Waiting) })
	for _, it := range q.delayed.items {
		if !it.processing {
			fn(it, Delayed)
		}
	}
	for _, it := range q.procs {
		fn(it, Processing)
	}
}

// Describe returns key's Item as Snapshot describes it, but without asking
// the RateLimiter (Retries is zero), and false if key is not in the queue.
func (v View[K]) Describe(key K) (Item[K], bool) {
	q := v.queue()
	q.mu.Lock()
	defer q.mu.Unlock()
	it := q.items.get(key)
	if it == nil || !it.queued() && !it.processing {
		return Item[K]{}, false
	}
	return q.describe(it), true
}

// Processing describes the keys handed out and not yet Done, in no
// particular order (Retries is zero): what a health check of stuck work
// needs, without copying the rest of the queue.
func (v View[K]) Processing() []Item[K] {
	q := v.queue()
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]Item[K], len(q.procs))
	for i, it := range q.procs {
		out[i] = q.describe(it)
	}
	return out
}

// describe returns the Item of it, without its requeue count. q.mu is held.
func (q *Queue[K]) describe(it *item[K]) Item[K] {
	x := Item[K]{Key: it.key, Dirty: it.dirty, Priority: int(it.priority), Tags: it.tags}
	switch {
	case it.processing:
		x.State = Processing
		x.Since = q.at(it.at)
	case it.waiting:
		x.State = Waiting
	default:
		x.State = Delayed
	}
	if it.delayed() {
		x.Until = q.at(it.deadline)
	}
	return x
}

// at converts the queue's clock to a time.Time.
func (q *Queue[K]) at(ns int64) time.Time { return q.epoch.Add(time.Duration(ns)) }

// sortedItems lists every item: waiting in hand-out order, then delayed by
// deadline, then processing by start. q.mu is held.
func (q *Queue[K]) sortedItems() []*item[K] {
	waiting := q.ready.items()
	delayed := make([]*item[K], 0, q.delayed.Len())
	for _, it := range q.delayed.items {
		if !it.processing {
			delayed = append(delayed, it)
		}
	}
	processing := slices.Clone(q.procs)
	slices.SortFunc(delayed, func(a, b *item[K]) int {
		return cmp.Or(cmp.Compare(a.deadline, b.deadline), cmp.Compare(a.pos, b.pos))
	})
	slices.SortFunc(processing, func(a, b *item[K]) int { return cmp.Compare(a.at, b.at) })
	return slices.Concat(waiting, delayed, processing)
}
