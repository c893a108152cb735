package store

// history is the retained tail of a store's change log: one event per
// revision, for the contiguous revisions (first-1, last]. It is a ring that
// grows up to limit (at least 1) entries and then overwrites its oldest entry. It is not
// safe for concurrent use; Memory guards it with its lock.
type history[T any] struct {
	ring  []record[T]
	start int   // index in ring of the oldest retained revision
	n     int   // retained entries
	first int64 // revision of the oldest retained entry, or the next revision if n == 0
	limit int
}

// record is one history entry: the event and, when mutation checking is on,
// the fingerprint of its value at the time it was written.
type record[T any] struct {
	ev Event[T]
	fp []byte
}

func newHistory[T any](limit int) history[T] {
	return history[T]{first: 1, limit: limit}
}

// add appends the event of revision r.ev.Object.Revision, which must be the
// revision after the last one added, dropping the oldest entry when full.
func (h *history[T]) add(r record[T]) {
	switch {
	case h.n < len(h.ring):
		h.ring[(h.start+h.n)%len(h.ring)] = r
		h.n++
	case len(h.ring) < h.limit:
		if h.start != 0 {
			h.linearize()
		}
		h.ring = append(h.ring, r)
		h.n++
	default:
		h.ring[h.start] = r
		h.start = (h.start + 1) % len(h.ring)
		h.first++
	}
}

// linearize moves the oldest entry to index 0, so that the ring can grow by
// appending.
func (h *history[T]) linearize() {
	lin := make([]record[T], h.n, min(2*h.n+1, h.limit))
	k := copy(lin, h.ring[h.start:])
	copy(lin[k:], h.ring[:h.start])
	h.ring = lin
	h.start = 0
}

// at returns the entry of revision rev; ok is false if rev is not retained.
func (h *history[T]) at(rev int64) (r record[T], ok bool) {
	if rev < h.first || rev >= h.first+int64(h.n) {
		return r, false
	}
	return h.ring[(h.start+int(rev-h.first))%len(h.ring)], true
}

// oldest returns the oldest revision a watch may start after: every revision
// after it is retained.
func (h *history[T]) oldest() int64 { return h.first - 1 }

// compact drops every entry with a revision at or below rev.
func (h *history[T]) compact(rev int64) {
	for h.n > 0 && h.first <= rev {
		h.ring[h.start] = record[T]{}
		h.start = (h.start + 1) % len(h.ring)
		h.n--
		h.first++
	}
	if h.n == 0 && h.first <= rev {
		h.first = rev + 1
	}
}

// all calls f for every retained record, oldest first.
func (h *history[T]) all(f func(*record[T])) {
	for i := range h.n {
		f(&h.ring[(h.start+i)%len(h.ring)])
	}
}
