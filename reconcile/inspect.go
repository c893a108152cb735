package reconcile

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/converge-go/converge/queue"
)

// defaultKeyLimit is the page size of Inspect when KeyQuery.Limit is not
// positive.
const defaultKeyLimit = 100

// KeySort orders the keys of an Inspect page. Every order ends by key, so
// pages of one query do not overlap.
type KeySort uint8

const (
	// ByKey: key order.
	ByKey KeySort = iota
	// ByState: processing, then waiting, then delayed, then not queued.
	ByState
	// ByOutcome: by how much the latest reconcile's outcome needs a
	// person: panic, error, terminal, dependency_down and awaiting_store,
	// conflict, then requeue and requeue_after, then success, then keys
	// never reconciled.
	ByOutcome
	// ByRetries: most retries first.
	ByRetries
	// ByPendingSince: the oldest unconverged change first, keys with
	// none last.
	ByPendingSince
)

// KeyQuery selects and orders one page of keys for Inspect.
type KeyQuery struct {
	// Prefix keeps the keys that start with it ("" keeps all).
	Prefix string
	// States keeps the keys in one of these queue states; the zero State
	// stands for keys that are not queued. Empty keeps every state.
	States []queue.State
	// Sort orders the matching keys; Descending reverses the order.
	Sort       KeySort
	Descending bool
	// Offset skips that many matching keys; Limit bounds the page
	// (100 when not positive).
	Offset, Limit int
}

// KeyPage is one page of keys, as Snapshot describes them.
type KeyPage struct {
	// Keys are the page's keys in the query's order.
	Keys []KeyState
	// Matched counts the keys that match the query's Prefix and States.
	Matched int
	// States counts the keys that match the query's Prefix, by queue
	// state (the zero State: not queued), whatever its States say.
	States map[queue.State]int
}

// inspectRow is what Inspect keeps of a key while it selects a page.
type inspectRow struct {
	key     string
	state   queue.State // zero if not queued
	retries int
	// need ranks the latest reconcile's outcome for ByOutcome (see
	// outcomeNeed); 0: never reconciled.
	need uint8
	// pending is when the key's oldest pending change was seen, in Unix
	// nanoseconds (0: none), so that ordering by it compares integers.
	pending int64
}

// Inspect returns one page of the keys Snapshot would list, filtered and
// ordered by q: the basis of a debug page over many keys. Under the
// controller's lock it walks the queue's keys (under the queue's lock,
// copying nothing), the pending changes and the ledger's records once,
// keeping the first Offset+Limit keys in a bounded heap, and builds a
// KeyState for the page's keys only, describing each from the queue
// again. Like Snapshot, it is not atomic: a page key that left the queue
// meanwhile shows without its queue details. It records nothing a reader
// sees and starts nothing: it costs nothing while nobody calls it.
//
// Cost: O(n log k) for n keys and k = Offset+Limit. A queued key is looked
// up once in the ledger; the walk over idle records (reconciled, neither
// queued nor pending) reads them in storage order and is skipped when
// every key matches and no idle key could enter the page; the rate limiter
// is asked for the page's keys only, unless the page is ordered
// ByRetries.
func (c *Controller[T]) Inspect(q KeyQuery) KeyPage {
	q0 := c.q()
	limitStale := time.Now().Add(-c.opts.StaleAfter)
	c.mu.Lock()
	defer c.mu.Unlock()
	led := c.led
	w := newPageWalk(led, q)
	walk := led.newWalk()
	// Each key is counted once, in the first of three walks that meets it:
	// the queued keys, the pending ones not queued, the reconciled ones
	// neither queued nor pending. The walks mark the records they meet.
	q0.View().States(func(h queue.Handout[string], st queue.State) {
		key := h.Key
		if !strings.HasPrefix(key, q.Prefix) {
			return
		}
		row := inspectRow{key: key, state: st}
		if q.Sort == ByRetries {
			row.retries = c.opts.RateLimiter.NumRequeues(key)
		}
		if r := led.hinted(key, h.Hint); r != nil {
			r.walk = walk
			w.describeRow(&row, r)
		}
		w.add(row)
	})
	led.eachPendingRecord(func(r *record) {
		if r.walk == walk || !strings.HasPrefix(r.key, q.Prefix) {
			return
		}
		r.walk = walk
		row := inspectRow{key: r.key}
		w.describeRow(&row, r)
		w.add(row)
	})
	w.walkIdle(walk)
	return w.page(c, q0, limitStale)
}

// pageWalk is the state of one Inspect: the query, the rows selected so
// far and the counts.
type pageWalk[T any] struct {
	led     *ledger[T]
	q       KeyQuery
	offset  int
	limit   int
	wanted  [8]bool // by queue.State; the zero State: not queued
	sel     *pageHeap[inspectRow]
	primary func(a, b inspectRow) int
	states  [8]int // rows met, by queue.State
	matched int
	// metReconciled counts the rows met by the first two walks whose key
	// has a last reconcile.
	metReconciled int
}

func newPageWalk[T any](led *ledger[T], q KeyQuery) *pageWalk[T] {
	w := &pageWalk[T]{led: led, q: q, limit: q.Limit, offset: max(q.Offset, 0)}
	if w.limit <= 0 {
		w.limit = defaultKeyLimit
	}
	for _, s := range q.States {
		if int(s) < len(w.wanted) {
			w.wanted[s] = true
		}
	}
	order, primary := rowOrder(q.Sort, q.Descending)
	w.sel = &pageHeap[inspectRow]{cmp: order, max: satAdd(w.offset, w.limit)}
	w.primary = primary
	return w
}

// keeps reports whether rows of state s match the query.
func (w *pageWalk[T]) keeps(s queue.State) bool { return len(w.q.States) == 0 || w.wanted[s] }

// add counts a row and offers it to the selection if it matches.
func (w *pageWalk[T]) add(row inspectRow) {
	w.states[row.state&7]++
	if w.keeps(row.state) {
		w.matched++
		w.sel.offer(row)
	}
}

// describeRow fills row from its key's record.
func (w *pageWalk[T]) describeRow(row *inspectRow, r *record) {
	if p := w.led.pendingOf(r); p != nil {
		row.pending = w.led.timeAt(p.since).UnixNano()
	}
	if r.has(reconciled) {
		w.metReconciled++
		row.need = outcomeNeed[r.code]
	}
}

// walkIdle counts the reconciled keys the first two walks did not meet
// (marked walk), and offers those that could enter the page. The walk is
// skipped when every key matches and no idle row could enter the page:
// an idle row differs from another only by its key (unless the page is
// ordered by outcome), so when the page is full of rows that an idle row
// comes after, or idle rows are filtered out, it would only count.
func (w *pageWalk[T]) walkIdle(walk uint32) {
	needOutcome := w.q.Sort == ByOutcome
	idleLoses := !w.keeps(0) || len(w.sel.rows) == w.sel.max && w.primary(inspectRow{}, w.sel.rows[0]) > 0
	n := 0
	if w.q.Prefix == "" && !needOutcome && idleLoses {
		n = w.led.lastCount
	} else {
		w.led.recs.each(func(r *record) {
			if !r.has(reconciled) || !strings.HasPrefix(r.key, w.q.Prefix) {
				return
			}
			n++
			if r.walk == walk {
				return
			}
			row := inspectRow{key: r.key}
			if needOutcome {
				row.need = outcomeNeed[r.code]
			}
			if w.keeps(0) && w.sel.wants(row) {
				w.sel.offer(row)
			}
		})
	}
	idle := n - w.metReconciled
	w.states[0] += idle
	if w.keeps(0) {
		w.matched += idle
	}
}

// page returns the page the walks selected, each key described from the
// queue and the ledger.
func (w *pageWalk[T]) page(c *Controller[T], q *queue.Queue[string], limitStale time.Time) KeyPage {
	page := KeyPage{Matched: w.matched, States: map[queue.State]int{}}
	for st, n := range w.states {
		if n > 0 || st == 0 {
			page.States[queue.State(st)] = n
		}
	}
	rows := w.sel.sorted()
	if w.offset >= len(rows) {
		return page
	}
	rows = rows[w.offset:min(len(rows), satAdd(w.offset, w.limit))]
	page.Keys = make([]KeyState, len(rows))
	for i, row := range rows {
		s := &page.Keys[i]
		s.Key = row.key
		if row.state != 0 {
			if it, ok := q.View().Describe(row.key); ok {
				s.State, s.Dirty, s.Since, s.Until = it.State, it.Dirty, it.Since, it.Until
				s.Priority, s.Retries, s.Triggers = it.Priority, c.opts.RateLimiter.NumRequeues(row.key), c.triggerNamesOf(it.Tags)
			}
		}
		s.LastTriggers = c.triggerNamesOf(w.led.describe(s, limitStale))
	}
	return page
}

// satAdd adds two non-negative ints, saturating at the largest int.
func satAdd(a, b int) int {
	if s := a + b; s >= a {
		return s
	}
	return int(^uint(0) >> 1)
}

// rowOrder returns the comparison of sort s, ending by key, and its
// primary comparison alone (the sort's field, without the key).
func rowOrder(s KeySort, desc bool) (order, primary func(a, b inspectRow) int) {
	var first func(a, b inspectRow) int
	switch s {
	case ByState:
		first = func(a, b inspectRow) int { return cmp.Compare(stateRank(a.state), stateRank(b.state)) }
	case ByOutcome:
		first = func(a, b inspectRow) int { return cmp.Compare(b.need, a.need) }
	case ByRetries:
		first = func(a, b inspectRow) int { return cmp.Compare(b.retries, a.retries) }
	case ByPendingSince:
		first = func(a, b inspectRow) int {
			return cmp.Or(compareLast(a.pending == 0, b.pending == 0), cmp.Compare(a.pending, b.pending))
		}
	default:
		first = func(a, b inspectRow) int { return 0 }
	}
	// The key is compared only on a tie: most rows of a large walk are
	// told apart by the first field (cmp.Or would compare both).
	byKey := func(a, b inspectRow) int {
		if c := first(a, b); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	}
	if desc {
		return func(a, b inspectRow) int { return -byKey(a, b) }, func(a, b inspectRow) int { return -first(a, b) }
	}
	return byKey, first
}

// compareLast orders a row whose field is missing (true) after one whose
// field is there.
func compareLast(aMissing, bMissing bool) int {
	switch {
	case aMissing == bMissing:
		return 0
	case aMissing:
		return 1
	}
	return -1
}

// stateRank orders queue states for ByState: processing, waiting,
// delayed, not queued.
func stateRank(s queue.State) int {
	switch s {
	case queue.Processing:
		return 0
	case queue.Waiting:
		return 1
	case queue.Delayed:
		return 2
	}
	return 3
}

// pageHeap keeps the max rows that come first in cmp's order: a heap with
// the last of them on top, so a row that comes after it is dropped with
// one comparison. It selects Inspect's page and Health's first stale keys.
type pageHeap[R any] struct {
	cmp  func(a, b R) int
	max  int
	rows []R
}

// wants reports whether offer would keep r.
func (h *pageHeap[R]) wants(r R) bool {
	return len(h.rows) < h.max || h.cmp(r, h.rows[0]) < 0
}

// offer keeps r if it comes before the last row kept, dropping that one
// when max rows are kept.
func (h *pageHeap[R]) offer(r R) {
	if len(h.rows) < h.max {
		h.rows = append(h.rows, r)
		for j := len(h.rows) - 1; j > 0; {
			i := (j - 1) / 2
			if h.cmp(h.rows[i], h.rows[j]) >= 0 {
				break
			}
			h.rows[i], h.rows[j] = h.rows[j], h.rows[i]
			j = i
		}
		return
	}
	if len(h.rows) == 0 || h.cmp(r, h.rows[0]) >= 0 {
		return
	}
	h.rows[0] = r
	for i, n := 0, len(h.rows); ; {
		j := 2*i + 1
		if j >= n {
			break
		}
		if j+1 < n && h.cmp(h.rows[j+1], h.rows[j]) > 0 {
			j++
		}
		if h.cmp(h.rows[i], h.rows[j]) >= 0 {
			break
		}
		h.rows[i], h.rows[j] = h.rows[j], h.rows[i]
		i = j
	}
}

// sorted returns the kept rows in cmp's order.
func (h *pageHeap[R]) sorted() []R {
	slices.SortFunc(h.rows, h.cmp)
	return h.rows
}

// Snapshot lists every key that is queued or has been reconciled, sorted
// by key: the basis of a debug page. It copies the queue's snapshot and the
// ledger's records, O(n log n) in their number.
func (c *Controller[T]) Snapshot() []KeyState {
	limit := time.Now().Add(-c.opts.StaleAfter)
	states := map[string]*KeyState{}
	for _, it := range c.q().View().Snapshot() {
		states[it.Key] = &KeyState{Key: it.Key, State: it.State, Dirty: it.Dirty, Since: it.Since, Until: it.Until,
			Priority: it.Priority, Retries: it.Retries, Triggers: c.triggerNamesOf(it.Tags)}
	}
	c.mu.Lock()
	c.led.recs.each(func(r *record) {
		if _, ok := states[r.key]; !ok {
			states[r.key] = &KeyState{Key: r.key}
		}
	})
	for _, s := range states {
		s.LastTriggers = c.triggerNamesOf(c.led.describe(s, limit))
	}
	c.mu.Unlock()
	out := make([]KeyState, 0, len(states))
	for _, s := range states {
		if s.State != 0 || !s.LastAt.IsZero() || !s.PendingSince.IsZero() || s.LastOutcome != "" {
			out = append(out, *s)
		}
	}
	slices.SortFunc(out, func(a, b KeyState) int { return strings.Compare(a.Key, b.Key) })
	return out
}
