package queue

import (
	"cmp"
	"slices"

	"github.com/converge-go/converge/internal/mapshrink"
)

// readyQueue holds the ready keys: one FIFO ring per priority level, so
// that adding and handing out cost O(1) with the handful of levels real
// programs use. Each waiting key carries its virtual position (item.at:
// hand-outs when it became ready, minus priority × aging); Get serves the
// level whose head has the smallest, preferring the higher priority on a
// tie. Within a level positions only grow, so each ring is already in
// hand-out order.
//
// Removal is lazy: a removed key (or one moved to another level) leaves a
// stale slot behind, recognised by its absolute ring position no longer
// matching the item's, and skipped when it reaches the head.
type readyQueue[K comparable] struct {
	levels     []*level[K] // by priority, highest first
	last       *level[K]   // the level used last: usually the only one
	live       int         // waiting keys (valid slots)
	byPriority bool        // no aging: strict priority order
}

// level is the FIFO ring of one priority.
type level[K comparable] struct {
	priority int32
	ring     []*item[K] // circular; len(ring) is the capacity
	head     int        // index of the first slot
	n        int        // slots in use, stale ones included
	headPos  uint64     // absolute position of the first slot
	live     int        // valid slots
}

// Len returns the number of waiting keys.
func (r *readyQueue[K]) Len() int { return r.live }

// level returns the level of priority p, creating it if needed.
func (r *readyQueue[K]) level(p int32) *level[K] {
	if r.last != nil && r.last.priority == p {
		return r.last
	}
	r.last = r.find(p)
	return r.last
}

func (r *readyQueue[K]) find(p int32) *level[K] {
	i, found := slices.BinarySearchFunc(r.levels, p, func(l *level[K], p int32) int { return cmp.Compare(p, l.priority) })
	if found {
		return r.levels[i]
	}
	l := &level[K]{priority: p}
	r.levels = slices.Insert(r.levels, i, l)
	return l
}

// push appends it to the ring of its priority.
func (r *readyQueue[K]) push(it *item[K]) {
	l := r.level(it.priority)
	if l.n == len(l.ring) {
		l.grow()
	}
	l.ring[(l.head+l.n)%len(l.ring)] = it
	it.pos = l.headPos + uint64(l.n)
	it.waiting = true
	l.n++
	l.live++
	r.live++
}

// valid reports whether the slot at absolute position pos of l still holds
// it as a waiting key.
func (l *level[K]) valid(it *item[K], pos uint64) bool {
	return it.waiting && it.priority == l.priority && it.pos == pos
}

// front drops stale slots from the head of l and returns its first valid
// key, or nil.
func (l *level[K]) front() *item[K] {
	for l.n > 0 {
		it := l.ring[l.head]
		if l.valid(it, l.headPos) {
			return it
		}
		l.dropHead()
	}
	return nil
}

func (l *level[K]) dropHead() {
	l.ring[l.head] = nil
	l.head = (l.head + 1) % len(l.ring)
	l.headPos++
	l.n--
	if l.n == 0 {
		l.head = 0
	}
	l.shrink()
}

// pop removes and returns the key Get hands out next; the queue must not
// be empty.
func (r *readyQueue[K]) pop() *item[K] {
	var best *level[K]
	var bestItem *item[K]
	for _, l := range r.levels {
		it := l.front()
		if it == nil {
			continue
		}
		if r.byPriority {
			best, bestItem = l, it
			break
		}
		// Levels are visited from the highest priority down, so a strict
		// comparison keeps the higher priority on a tie.
		if bestItem == nil || it.at < bestItem.at {
			best, bestItem = l, it
		}
	}
	best.dropHead()
	best.live--
	r.live--
	bestItem.waiting = false
	return bestItem
}

// remove takes a waiting key out, leaving a stale slot behind.
func (r *readyQueue[K]) remove(it *item[K]) {
	l := r.level(it.priority)
	it.waiting = false
	l.live--
	r.live--
	l.compact()
}

// grow doubles the ring (at least 8 slots), unwrapping it.
func (l *level[K]) grow() {
	l.resize(max(8, 2*len(l.ring)))
}

func (l *level[K]) resize(capacity int) {
	ring := make([]*item[K], capacity)
	for i := range l.n {
		ring[i] = l.ring[(l.head+i)%len(l.ring)]
	}
	l.ring, l.head = ring, 0
}

// shrink gives back a large ring once a burst has drained.
func (l *level[K]) shrink() {
	if c := len(l.ring); c > mapshrink.Floor && l.n < c/8 {
		l.resize(max(8, 2*l.n))
	}
}

// compact drops stale slots once they outnumber the valid ones, so that
// removals without hand-outs cannot grow a ring without bound.
func (l *level[K]) compact() {
	if l.n-l.live <= max(64, l.live) {
		return
	}
	ring := make([]*item[K], max(8, 2*l.live))
	k := 0
	for i := range l.n {
		pos := l.headPos + uint64(i)
		if it := l.ring[(l.head+i)%len(l.ring)]; l.valid(it, pos) {
			ring[k] = it
			it.pos = l.headPos + uint64(k)
			k++
		}
	}
	l.ring, l.head, l.n = ring, 0, k
}

// each calls fn with every waiting key, level by level, each level in
// FIFO order: the order the keys became ready, which for a burst of new
// keys is also the order their records lie in memory.
func (r *readyQueue[K]) each(fn func(*item[K])) {
	for _, l := range r.levels {
		for i := range l.n {
			pos := l.headPos + uint64(i)
			if it := l.ring[(l.head+i)%len(l.ring)]; l.valid(it, pos) {
				fn(it)
			}
		}
	}
}

// items returns the waiting keys in hand-out order.
func (r *readyQueue[K]) items() []*item[K] {
	out := make([]*item[K], 0, r.live)
	r.each(func(it *item[K]) { out = append(out, it) })
	if r.byPriority {
		return out // levels are visited highest first, each in FIFO order
	}
	slices.SortStableFunc(out, func(a, b *item[K]) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(b.priority, a.priority))
	})
	return out
}
