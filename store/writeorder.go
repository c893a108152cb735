package store

import (
	"cmp"
	"slices"
	"sort"
	"strings"
)

// writeOrder is a Memory store's keys in the order of their latest write,
// so that a Diff reads the keys written after a revision, not every key
// held: a watcher that falls behind a burst of writes catches up in the
// time of what changed since, however large the store.
//
// It holds one entry per write, oldest first: an entry is current while
// its key's live object, or its remembered delete, is at the entry's
// revision, and stale once the key is written again or its delete
// forgotten. Stale entries are dropped once they are half as many as the
// keys known, so the order holds at most one and a half entries per key
// (24 to 36 bytes a key, and the slice's spare room), and a write costs
// amortised constant time (three lookups of a key, at most).
//
// A store keeps no order until a Diff finds it knowing orderFrom keys or
// more (build): a store no watcher ever catches up from pays nothing for
// it, and a smaller one is scanned whole, in well under a millisecond,
// rather than pay its 24 to 36 bytes a key.
type writeOrder struct {
	built bool
	log   []written
}

// written is one write: its key and revision.
type written struct {
	key string
	rev int64
}

// orderFrom is how many keys, live or remembered deleted, a store knows
// from which a Diff keeps the write order rather than scan every key.
const orderFrom = 1 << 16

// compactSlack is how many stale entries the order tolerates beyond the
// current ones before it drops them, so that a small store does not
// compact at every write.
const compactSlack = 1024

// build orders every key m knows, live or deleted, by its latest
// revision. Call with m.mu held for writing.
func (m *Memory[T]) buildOrder() {
	log := make([]written, 0, len(m.objects)+len(m.tombs.byKey))
	for k, e := range m.objects {
		log = append(log, written{k, e.rev})
	}
	for k, obj := range m.tombs.byKey {
		log = append(log, written{k, obj.Revision})
	}
	slices.SortFunc(log, func(a, b written) int { return cmp.Compare(a.rev, b.rev) })
	m.order = writeOrder{built: true, log: log}
}

// noteWrite appends the write of key at rev to the order, if one is kept,
// after m's objects and tombstones record it. Call with m.mu held for
// writing.
func (m *Memory[T]) noteWrite(key string, rev int64) {
	if !m.order.built {
		return
	}
	if log := m.order.log; len(log) == cap(log) {
		// Doubled, where append grows a large slice by a quarter: the
		// order is then copied about once as it grows, not about four
		// times.
		m.order.log = slices.Grow(log, len(log)+1)
	}
	m.order.log = append(m.order.log, written{key, rev})
	known := len(m.objects) + len(m.tombs.byKey)
	if len(m.order.log) > known+known/2+compactSlack {
		m.compactOrder(known)
	}
}

// compactOrder drops the stale entries, and gives back the log's unused
// room once most of it is unused. Call with m.mu held for writing.
func (m *Memory[T]) compactOrder(known int) {
	log := slices.DeleteFunc(m.order.log, func(w written) bool { return !m.current(w) })
	if cap(log) > 2*len(log)+compactSlack {
		log = slices.Clone(log)
	}
	m.order.log = log
}

// current reports whether w is its key's latest write that m still knows.
func (m *Memory[T]) current(w written) bool {
	if e, ok := m.objects[w.key]; ok {
		return e.rev == w.rev
	}
	obj, ok := m.tombs.byKey[w.key]
	return ok && obj.Revision == w.rev
}

// changedAfter appends to out, for each key under prefix written after
// revision after, its state now as an event (Created if the key was
// created after since), in revision order, and stops once it holds limit
// events (0: none). It returns them and the revision up to which they
// report the change: m.rev if it did not stop. Call with m.mu held (for
// reading once the order is built).
func (m *Memory[T]) changedAfter(prefix string, since, after int64, limit int, out []Event[T]) ([]Event[T], int64) {
	log := m.order.log
	i := sort.Search(len(log), func(i int) bool { return log[i].rev > after })
	// At most one event an entry: sized once, not grown by copying (a
	// catch-up may return most of the store).
	room := len(log) - i
	if limit > 0 {
		room = min(room, limit)
	}
	out = slices.Grow(out, room)
	for _, w := range log[i:] {
		if limit > 0 && len(out) == limit {
			return out, out[len(out)-1].Object.Revision
		}
		if !strings.HasPrefix(w.key, prefix) {
			continue
		}
		if e, ok := m.objects[w.key]; ok {
			if e.rev == w.rev {
				typ := Updated
				if e.createRev > since {
					typ = Created
				}
				out = append(out, Event[T]{Type: typ, Object: e.object(w.key)})
			}
			continue
		}
		if obj, ok := m.tombs.byKey[w.key]; ok && obj.Revision == w.rev {
			out = append(out, Event[T]{Type: Deleted, Object: obj})
		}
	}
	return out, m.rev
}

// scanChanged is changedAfter without the order or a limit: every key m
// knows is looked at once, and the changed ones sorted by revision. Call
// with m.mu held.
func (m *Memory[T]) scanChanged(prefix string, since, after int64, out []Event[T]) []Event[T] {
	n := 0 // counted first, so that out is sized once
	for k, e := range m.objects {
		if e.rev > after && strings.HasPrefix(k, prefix) {
			n++
		}
	}
	for k, obj := range m.tombs.byKey {
		if obj.Revision > after && strings.HasPrefix(k, prefix) {
			n++
		}
	}
	out = slices.Grow(out, n)
	for k, e := range m.objects {
		if e.rev > after && strings.HasPrefix(k, prefix) {
			typ := Updated
			if e.createRev > since {
				typ = Created
			}
			out = append(out, Event[T]{Type: typ, Object: e.object(k)})
		}
	}
	for k, obj := range m.tombs.byKey {
		if obj.Revision > after && strings.HasPrefix(k, prefix) {
			out = append(out, Event[T]{Type: Deleted, Object: obj})
		}
	}
	slices.SortFunc(out, func(a, b Event[T]) int { return cmp.Compare(a.Object.Revision, b.Object.Revision) })
	return out
}
