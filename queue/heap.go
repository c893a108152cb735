package queue

import "github.com/converge-go/converge/internal/mapshrink"

// itemHeap is the delay heap: a binary min-heap of items ordered by
// (deadline, pos), pos being the order of the delays. Each item records its
// index in the heap, so removal and re-ordering are O(log n).
type itemHeap[K comparable] struct {
	items []*item[K]
}

func (h *itemHeap[K]) Len() int { return len(h.items) }

func (h *itemHeap[K]) less(a, b *item[K]) bool {
	if a.deadline != b.deadline {
		return a.deadline < b.deadline
	}
	return a.pos < b.pos
}

func (h *itemHeap[K]) index(it *item[K]) *int32 { return &it.delayIdx }

func (h *itemHeap[K]) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	*h.index(h.items[i]) = int32(i)
	*h.index(h.items[j]) = int32(j)
}

func (h *itemHeap[K]) push(it *item[K]) {
	h.items = append(h.items, it)
	*h.index(it) = int32(len(h.items) - 1)
	h.up(len(h.items) - 1)
}

// peek returns the minimum without removing it; the heap must not be empty.
func (h *itemHeap[K]) peek() *item[K] { return h.items[0] }

func (h *itemHeap[K]) pop() *item[K] {
	return h.remove(0)
}

// remove takes out the item at position i.
func (h *itemHeap[K]) remove(i int) *item[K] {
	n := len(h.items) - 1
	it := h.items[i]
	if i != n {
		h.swap(i, n)
	}
	h.items[n] = nil
	h.items = h.items[:n]
	if i != n {
		h.fix(i)
	}
	*h.index(it) = -1
	h.shrink()
	return it
}

// fix restores order after the item at position i changed its key.
func (h *itemHeap[K]) fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h *itemHeap[K]) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !h.less(h.items[j], h.items[i]) {
			break
		}
		h.swap(i, j)
		j = i
	}
}

func (h *itemHeap[K]) down(i0 int) bool {
	i, n := i0, len(h.items)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && h.less(h.items[r], h.items[l]) {
			j = r
		}
		if !h.less(h.items[j], h.items[i]) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}

// shrink gives back the backing array once a burst has drained: when fewer
// than an eighth of a large array is in use, it is reallocated to fit.
func (h *itemHeap[K]) shrink() {
	if c := cap(h.items); c > mapshrink.Floor && len(h.items) < c/8 {
		h.items = append(make([]*item[K], 0, 2*len(h.items)), h.items...)
	}
}
