// Package debugpage serves a read-only page that answers "why isn't key X
// converging?" for people (HTML) and tools (JSON), from one handler.
//
// The page lists every controller given to New: its health (synced,
// degraded reasons, stuck reconciles, stale keys, keys refused as outside
// its view, quoted so that an empty or unprintable key shows), the
// leadership of the process and the term's fencing token when the caller
// provides them, its store's status, cache revision and workers; then its
// keys, one page at a time: queue state by name, retries and next retry
// time, the latest reconcile's outcome, error (wrapped at word
// boundaries in a column of readable width), duration and revision, what
// triggered the next and the latest reconcile, how long a change has
// been pending, the time since the last success, the last convergence
// latency, the stale mark, and the log attributes to search the
// controller's logs for (controller=… key=… revision=…, as every log line
// of a reconcile carries them).
//
// A sharded controller (reconcile.Options.Shard) whose Sharder has a
// Status method (ShardStatus: reconcile/shard's Replica) gets a shard
// section: this replica's ID, membership and term, whether it is the
// assigner, how many buckets it owns; the members with their bucket
// counts; the ownerless buckets, highlighted (Health.Ownerless: a crashed
// replica's buckets until their takeover); and every bucket's owner,
// fencing epoch, moves, planned target and state by name (ownerless,
// releasing, mine, moving, owned). Past 64 buckets the table is folded
// under a summary counting the states, the ownerless ones still named
// above it; the JSON always lists every bucket.
//
// It is off unless mounted, for instance on a Manager's HTTP server:
//
//	m.Handle("/debug/converge/", debugpage.New(debugpage.Options{IsLeader: m.IsLeader}, c1, c2))
//
// # Queries
//
// GET parameters select what is shown; bad values fall back to defaults:
//
//   - format=json (or an Accept header preferring application/json): JSON
//     instead of HTML.
//   - controller=NAME: that controller only.
//   - state=processing|waiting|delayed|idle (repeatable, or comma
//     separated): keys in those states; idle is a key not queued.
//   - prefix=P: keys starting with P.
//   - sort=key|state|outcome|retries|pending, desc=true: the order
//     (outcome: the keys that most need a person first — panic, error,
//     terminal, conflict, then requeue and requeue_after, then success,
//     then never reconciled; retries: most retries first; pending: the
//     oldest pending change first); ties are broken by key.
//   - page=N (from 1), size=N (default DefaultPageSize, at most
//     MaxPageSize): pagination, per controller.
//
// In JSON, times are RFC 3339 in UTC and durations text ("1.5s"); states
// and outcomes are names, never numbers; empty fields are left out.
//
// # Contract
//
// The handler only reads: it answers GET and HEAD, and 405 to every other
// method; it has no endpoint that changes anything. It sets no cookie and
// serves no script (its Content-Security-Policy forbids them), and every
// key, error and name is escaped, since they are user data. It does not
// authenticate: mount it behind the server's authentication (the
// Manager's TLS client certificates, or a wrapping handler).
//
// It costs nothing while nobody looks: no goroutine, no recording. A
// request costs one Controller.Health and one Controller.Inspect per
// controller shown (and one Status of a sharded one's Sharder); Inspect
// walks the controller's keys once, keeps the page's in a bounded heap and
// builds only theirs. Three benchmarks render the first page of a
// controller over 100,000 keys in the order that must look at every key
// (sort=pending): BenchmarkPage with 90,000 converged and 10,000 failing
// and backing off; BenchmarkPageAllQueued with all of them queued and never
// reconciled (an initial list behind a busy worker); and
// BenchmarkPageAllQueuedAfterChanges with all of them converged, then
// changed at once in no particular order and queued again behind a busy
// worker:
//
//	go test ./reconcile/debugpage -run '^$' -bench Page -benchmem
//
// On a 2-core AMD EPYC, 2026-12-01 08:49 UTC, after pending changes shrank
// to 56 bytes, 8 runs of -benchtime 20x (load average 1.1-1.4; medians in
// brackets):
//
//	BenchmarkPage/html-2                       3.5-4.4 ms/op (3.6)  0.54 MB/op  11,670 allocs/op
//	BenchmarkPage/json-2                       2.0-2.2 ms/op (2.1)  0.57 MB/op   1,460 allocs/op
//	BenchmarkPageAllQueued/html-2              18-20 ms/op (19)     0.45 MB/op   7,670 allocs/op
//	BenchmarkPageAllQueued/json-2              16-19 ms/op (17)     0.35 MB/op     560 allocs/op
//	BenchmarkPageAllQueuedAfterChanges/html-2  16-20 ms/op (19)     0.51 MB/op  10,370 allocs/op
//	BenchmarkPageAllQueuedAfterChanges/json-2  16-19 ms/op (17)     0.57 MB/op   1,360 allocs/op
//
// The same machine is often twice as slow when the shared host is busy.
// The same day at 08:01 UTC, 8 runs of -benchtime 20x
// (load average 1.2-1.4 from other work on this shared VM; the spread is
// its, run to run; medians in brackets):
//
//	BenchmarkPage/html-2                       4.5-7.0 ms/op (5.8)  0.55 MB/op  11,670 allocs/op
//	BenchmarkPage/json-2                       2.6-5.1 ms/op (3.5)  0.58 MB/op   1,460 allocs/op
//	BenchmarkPageAllQueued/html-2              36-52 ms/op (40)     0.45 MB/op   7,670 allocs/op
//	BenchmarkPageAllQueued/json-2              27-52 ms/op (35)     0.36 MB/op     560 allocs/op
//	BenchmarkPageAllQueuedAfterChanges/html-2  34-57 ms/op (39)     0.52 MB/op  10,370 allocs/op
//	BenchmarkPageAllQueuedAfterChanges/json-2  23-45 ms/op (42)     0.57 MB/op   1,360 allocs/op
//
// (cpu-ns/op, the process's CPU time per page, is within a few ms of
// ns/op.) Every median meets the 50 ms target; 3 of the 32 runs of the
// two all-queued benchmarks took 52-57 ms. Before 2026-12-01 they took
// 23-35 ms, 103-125 ms and (the third, first measured that day) 47-86 ms.
// Three changes brought them down: the queue's walks follow its ready
// rings, delay heap and list of keys in flight instead of its key map
// (reading a burst of records in the order they were allocated); a
// pending change records whether its key has a last-reconcile record, so
// that a queued key is looked up once in the controller instead of twice;
// and when the page is already full of rows that no idle key could come
// before, the idle keys' records are counted rather than walked. What
// remains in the all-queued cases is memory latency, one lookup per queued
// key: the key's bytes to hash and the map's group to probe, both cache
// misses at 100,000 keys, because the queue and the controller keep
// separate records (a profile puts two thirds of the time there). That
// state passes once the worker drains the burst. Controller.Snapshot,
// which copies and sorts every key, took 300 ms for the first benchmark's
// controller.
//
// The shard section of a replica owning 1,024 buckets (BenchmarkShardPage,
// go test ./reconcile/debugpage -run '^$' -bench ShardPage -benchmem,
// 2026-12-01, same machine under a load average of 8-9 from other work,
// two runs of 3): HTML 21-53 ms/op, 2.3 MB/op, 56,000 allocs/op (the
// template's 1,024 rows, folded); JSON 6-8.5 ms/op, 1.9 MB/op, 2,950
// allocs/op. The spread is the load's; the allocations are the template's
// escaping of 6 cells a row.
package debugpage

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/converge-go/converge/internal/nilness"
	"github.com/converge-go/converge/reconcile"
)

// Controller is what the page reads of a controller. Every
// *reconcile.Controller[T] has these methods, whatever its T.
type Controller interface {
	Name() string
	Health() reconcile.Health
	Inspect(q reconcile.KeyQuery) reconcile.KeyPage
}

// Options configure the page. The zero value works.
type Options struct {
	// IsLeader reports whether this process leads (manager.Manager's
	// IsLeader). Nil: leadership is not shown.
	IsLeader func() bool
	// Term returns the fencing token of the current term of leadership,
	// ok false when there is none (not leading). It is a hook for the
	// caller's elector: the lock package's held lock has a Token. Nil:
	// no term is shown.
	Term func() (token int64, ok bool)
	// LogURL, if set, returns a link to the caller's log search for a key
	// (its controller, key, and the revision its latest reconcile saw, 0
	// if none); the page links each key's log attributes to it. Only
	// http and https links are shown.
	LogURL func(controller, key string, revision int64) string
	// PageSize is the default number of keys listed per controller
	// (DefaultPageSize when not positive, at most MaxPageSize).
	PageSize int
}

// Handler serves the page. It is safe for concurrent use.
type Handler struct {
	opts        Options
	controllers []Controller
	now         func() time.Time
}

// New returns the page over controllers, in the order given. Nil
// controllers are ignored.
func New(opts Options, controllers ...Controller) *Handler {
	if opts.PageSize <= 0 {
		opts.PageSize = DefaultPageSize
	}
	opts.PageSize = min(opts.PageSize, MaxPageSize)
	h := &Handler{opts: opts, now: time.Now}
	for _, c := range controllers {
		if !nilness.Is(c) {
			h.controllers = append(h.controllers, c)
		}
	}
	return h
}

// ServeHTTP answers GET and HEAD with the page, as JSON when asked for it
// (see the package documentation), and every other method with 405.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "debugpage: read-only: GET or HEAD only", http.StatusMethodNotAllowed)
		return
	}
	v := h.view(parseQuery(r.URL.Query(), h.opts.PageSize))
	var buf bytes.Buffer
	if wantsJSON(r) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			http.Error(w, "debugpage: "+err.Error(), http.StatusInternalServerError)
			return
		}
	} else {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'")
		if err := page.Execute(&buf, v); err != nil {
			http.Error(w, "debugpage: "+err.Error(), http.StatusInternalServerError)
			return
		}
	}
	w.Write(buf.Bytes())
}

// view gathers what q shows.
func (h *Handler) view(q query) view {
	now := h.now()
	v := view{Generated: timestamp(now), Query: q, Controllers: []controllerView{}, Names: h.names()}
	for _, s := range states {
		v.StateBoxes = append(v.StateBoxes, choice{Name: s, Checked: slices.Contains(q.States, s)})
	}
	for _, s := range sorts {
		v.SortOptions = append(v.SortOptions, choice{Name: s.name, Checked: s.name == q.Sort})
	}
	js := q.values(q.Page)
	js.Set("format", "json")
	v.JSONLink = "?" + js.Encode()
	if h.opts.IsLeader != nil {
		leader := h.opts.IsLeader()
		v.Leader = &leader
	}
	if h.opts.Term != nil {
		if token, ok := h.opts.Term(); ok {
			v.Term = &token
		}
	}
	for _, c := range h.controllers {
		if q.Controller == "" || c.Name() == q.Controller {
			v.Controllers = append(v.Controllers, h.controllerOf(c, q, now))
		}
	}
	return v
}

// wantsJSON reports whether r asks for JSON: format=json, or an Accept
// header that names application/json before text/html.
func wantsJSON(r *http.Request) bool {
	switch r.URL.Query().Get("format") {
	case "json":
		return true
	case "html":
		return false
	}
	accept := r.Header.Get("Accept")
	j := strings.Index(accept, "application/json")
	if j < 0 {
		return false
	}
	h := strings.Index(accept, "text/html")
	return h < 0 || j < h
}

// names lists the controllers' names, for the page's controller filter.
func (h *Handler) names() []string {
	out := make([]string, 0, len(h.controllers))
	for _, c := range h.controllers {
		if !slices.Contains(out, c.Name()) {
			out = append(out, c.Name())
		}
	}
	return out
}
