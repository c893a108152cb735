package reconcile

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/converge-go/converge/queue"
)

// DefaultKeyLimit is the page size of Inspect when KeyQuery.Limit is not
// positive.
const DefaultKeyLimit = 100

// KeySort orders the keys of an Inspect page. Every order ends by key, so
// pages of one query do not overlap.
type KeySort uint8

const (
	// ByKey: key order.
	ByKey KeySort = iota
	// ByState: processing, then waiting, then delayed, then not queued.
	ByState
	// ByOutcome: by how much the latest reconcile's outcome needs a
	// person: panic, error, terminal, conflict, then requeue and
	// requeue_after, then success, then keys never reconciled.
	ByOutcome
	// ByAttempts: most retries first.
	ByAttempts
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
	// (DefaultKeyLimit when not positive).
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
// copying nothing) and the per-key records once, keeping the first
// Offset+Limit keys in a bounded heap, and builds a KeyState for the
// page's keys only, describing each from the queue again. Like Snapshot,
// it is not atomic: a page key that left the queue meanwhile shows without
// its queue details. It records nothing and starts nothing: it costs
// nothing while nobody calls it.
//
// Cost: O(n log k) for n keys and k = Offset+Limit. A queued key is looked
// up once (its pending change says whether it has a record, which is read
// only for ByOutcome or when nothing is pending); the walk over the
// reconciled keys hashes only those that enter the selection (and reads
// their records only for ByOutcome), and is skipped when every key
// matches and no idle key could enter the page; the rate limiter is asked
// for the page's keys only, unless the page is ordered ByAttempts.
func (c *Controller[T]) Inspect(q KeyQuery) KeyPage {
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultKeyLimit
	}
	offset := max(q.Offset, 0)
	var wanted [8]bool // by queue.State; the zero State: not queued
	for _, s := range q.States {
		if int(s) < len(wanted) {
			wanted[s] = true
		}
	}
	keep := func(s queue.State) bool { return len(q.States) == 0 || wanted[s] }
	order, primary := rowOrder(q.Sort, q.Descending)
	sel := &pageHeap[inspectRow]{cmp: order, max: satAdd(offset, limit)}
	page := KeyPage{States: map[queue.State]int{}}
	var states [8]int // by queue.State, copied into page.States at the end
	add := func(r inspectRow) {
		states[r.state&7]++
		if keep(r.state) {
			page.Matched++
			sel.offer(r)
		}
	}
	needOutcome := q.Sort == ByOutcome

	q0 := c.q()
	// The requeue counts come from the rate limiter, one lock each: only
	// for every queued key when they order the page, else for the page's.
	retries := func(key string) int { return c.opts.RateLimiter.NumRequeues(key) }
	limitStale := time.Now().Add(-c.opts.StaleAfter)
	c.mu.Lock()
	defer c.mu.Unlock()
	// Each key is counted once, in the first of three walks that meets it:
	// the queued keys, the pending ones not queued, the reconciled ones
	// neither queued nor pending. A queued key is looked up once in each
	// record map, while the queue's lock is held (lock order: c.mu, then
	// the queue's) and nothing is copied; the later walks hash a key only
	// when it could enter the page or when some pending keys are not
	// queued.
	queuedPending, queuedLast := 0, 0 // queued keys with a pending change, a record
	q0.States(func(key string, st queue.State) {
		if !strings.HasPrefix(key, q.Prefix) {
			return
		}
		row := inspectRow{key: key, state: st}
		if q.Sort == ByAttempts {
			row.retries = retries(key)
		}
		// A pending change says whether the key has a record: the record
		// is looked up only for its outcome or when nothing is pending.
		p, isPending := c.pending[key]
		if isPending {
			queuedPending++
			row.pending = c.timeAt(p.since).UnixNano()
		}
		if isPending && !needOutcome {
			if p.reconciled {
				queuedLast++
			}
		} else if r, ok := c.last[key]; ok {
			queuedLast++
			row.need = outcomeNeed[r.code]
		}
		add(row)
	})
	// queued is built only when a later walk must tell queued keys apart.
	var queued map[string]struct{}
	isQueued := func(key string) bool {
		if queued == nil {
			queued = make(map[string]struct{}, queuedPending+queuedLast)
			q0.States(func(key string, _ queue.State) {
				if strings.HasPrefix(key, q.Prefix) {
					queued[key] = struct{}{}
				}
			})
		}
		_, ok := queued[key]
		return ok
	}
	pendingHere := len(c.pending)
	if q.Prefix != "" {
		pendingHere = 0
		for key := range c.pending {
			if strings.HasPrefix(key, q.Prefix) {
				pendingHere++
			}
		}
	}
	pendingLast := 0 // pending keys not queued that have a record
	if pendingHere > queuedPending {
		for key, p := range c.pending {
			if !strings.HasPrefix(key, q.Prefix) || isQueued(key) {
				continue
			}
			row := inspectRow{key: key, pending: c.timeAt(p.since).UnixNano()}
			if p.reconciled {
				pendingLast++
				if needOutcome {
					r := c.last[key]
					row.need = outcomeNeed[r.code]
				}
			}
			add(row)
		}
	}
	// Then every reconciled key, idle with no pending change. Only the
	// few rows that would enter the selection are asked whether an
	// earlier walk met them.
	met := func(key string) bool {
		if _, ok := c.pending[key]; ok {
			return true
		}
		return queuedLast > 0 && isQueued(key)
	}
	reconciled := 0
	offer := func(row inspectRow) {
		reconciled++
		if keep(0) && sel.wants(row) && !met(row.key) {
			sel.offer(row)
		}
	}
	// An idle row differs from another only by its key (unless the page
	// is ordered by outcome): when the page is full of rows that an idle
	// row comes after whatever its key, or idle rows are filtered out,
	// and every key matches, the walk would only count the records.
	idleLoses := !keep(0) || len(sel.rows) == sel.max && primary(inspectRow{}, sel.rows[0]) > 0
	if q.Prefix == "" && !needOutcome && idleLoses {
		reconciled = len(c.last)
	} else if needOutcome {
		for key, r := range c.last {
			if strings.HasPrefix(key, q.Prefix) {
				offer(inspectRow{key: key, need: outcomeNeed[r.code]})
			}
		}
	} else {
		for key := range c.last { // keys only: a record is a pointer away
			if strings.HasPrefix(key, q.Prefix) {
				offer(inspectRow{key: key})
			}
		}
	}
	idle := reconciled - queuedLast - pendingLast
	states[0] += idle
	for st, n := range states {
		if n > 0 || st == 0 {
			page.States[queue.State(st)] = n
		}
	}
	if keep(0) {
		page.Matched += idle
	}
	rows := sel.sorted()
	if offset >= len(rows) {
		return page
	}
	rows = rows[offset:min(len(rows), satAdd(offset, limit))]
	page.Keys = make([]KeyState, len(rows))
	for i, row := range rows {
		s := &page.Keys[i]
		s.Key = row.key
		if row.state != 0 {
			if it, ok := q0.Describe(row.key); ok {
				s.State, s.Dirty, s.Since, s.Until = it.State, it.Dirty, it.Since, it.Until
				s.Priority, s.Retries, s.Triggers = it.Priority, retries(row.key), c.triggerNamesOf(it.Tags)
			}
		}
		if r, ok := c.last[row.key]; ok {
			c.describeLast(s, &r, limitStale)
		}
		if p, ok := c.pending[row.key]; ok {
			s.PendingSince = c.timeAt(p.since)
			s.Stale = s.Stale || s.PendingSince.Before(limitStale)
		}
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

// Workers returns how many workers the controller runs at once (or will
// run, before Run): Options.Workers, or the count of the latest SetWorkers.
func (c *Controller[T]) Workers() int {
	c.workersMu.Lock()
	defer c.workersMu.Unlock()
	return c.wantWorker
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
	case ByAttempts:
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
