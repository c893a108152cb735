// Package debugpage serves a read-only page that answers "why isn't key X
// converging?" for people (HTML) and tools (JSON), from one handler.
//
// The page lists every controller given to New: its health (synced,
// degraded reasons, stuck reconciles, stale keys, keys refused as outside
// its view, quoted so that an empty or unprintable key shows), the
// leadership of the process and the term's fencing token when the caller
// provides them, its store's status, cache revision and workers, its
// dependencies (reconcile.Options.Dependencies: up or down, since when,
// failures and the latest error, a dependency down highlighted, since
// the controller holds its keys meanwhile; the process's own too, with
// Options.Dependencies), its checkpoint if it has one
// (reconcile.Options.Checkpoint, Health.Checkpoint: by state, active or
// standby; while active, highlighted, "running from a checkpoint of
// revision R, age A"; otherwise the revision and age of the latest
// written; why it was refused at the start, the writes, the failed writes
// and the latest failure, the damaged checkpoints found and ignored);
// then its keys, one page at a time: queue state by name, retries and
// next retry time, the latest reconcile's outcome, error (wrapped at word
// boundaries in a column of readable width), duration and revision, what
// triggered the next and the latest reconcile, how long a change has been
// pending, the time since the last success, the last convergence latency,
// the stale mark, and the log attributes to search the controller's logs
// for (controller=… key=… revision=…, as every log line of a reconcile
// carries them).
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
//   - controller=NAME: that controller only; a name the page escapes
//     is also selected by its escaped form, as the form sends it.
//   - state=processing|waiting|delayed|idle (repeatable, or comma
//     separated): keys in those states; idle is a key not queued.
//   - prefix=P: keys starting with P. (A prefix holding characters the
//     page escapes shows escaped in the form, as a key does; submitting
//     the form then asks for the escape's text.)
//   - sort=key|state|outcome|retries|pending, desc=true: the order
//     (outcome: the keys that most need a person first — panic, error,
//     terminal, dependency_down, conflict, then requeue and
//     requeue_after, then success, then never reconciled; retries: most
//     retries first; pending: the
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
// key, error and name is escaped, since they are user data: no markup,
// and no control character, bidi or other format character, or byte that
// is not UTF-8 reaches the HTML as itself; each shows as its visible,
// marked escape (ESC as \x1b, U+202E as \u202e, the byte FF as \xff),
// from which the value can be told exactly. A key or name longer than 120
// characters, an error longer than 600, is cut with the bytes left out
// counted, the whole (up to 8,192 characters) one click away; the JSON
// has every value whole. Keys, log attributes and errors wrap within
// columns of fixed or bounded width, so that no value pushes the other
// columns off the page. It does not
// authenticate: mount it behind the server's authentication (the
// Manager's TLS client certificates, or a wrapping handler).
//
// It costs nothing while nobody looks: no goroutine, no recording. A
// request costs one Controller.Health and one Controller.Inspect per
// controller shown, and one Status of a sharded one's Sharder. A page of k
// keys of a controller over n keys costs O(n log k) time and builds and
// renders only its k rows; Inspect holds the controller's lock while it
// walks the keys, so a request delays that controller's intake for as
// long. A shard section costs O(b) for b buckets. Figures for 100,000
// keys and 1,024 buckets, with the commands that reproduce them, are in
// reconcile/internal/bench/README.md.
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
	"github.com/converge-go/converge/reconcile/dependency"
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
	// Dependencies returns the process's own dependencies
	// (manager.Manager's Dependencies), shown above the controllers. Nil:
	// none are shown (each controller's own are, from its Health).
	Dependencies func() []dependency.State
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
	v := view{Generated: timestamp(now), Query: q, Controllers: []controllerView{}, Names: h.names(q)}
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
	if h.opts.Dependencies != nil {
		v.Dependencies = dependenciesOf(h.opts.Dependencies(), now)
	}
	for _, c := range h.controllers {
		if q.Controller == "" || c.Name() == q.Controller || attr(c.Name()) == q.Controller {
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

// names lists the controllers' names for the page's controller filter,
// displayed for an attribute (a name the display rule changes is selected
// by its displayed form), the one q selects checked.
func (h *Handler) names(q query) []choice {
	out := make([]choice, 0, len(h.controllers))
	for _, c := range h.controllers {
		name := attr(c.Name())
		if !slices.ContainsFunc(out, func(o choice) bool { return o.Name == name }) {
			out = append(out, choice{Name: name, Checked: name == q.Controller || c.Name() == q.Controller})
		}
	}
	return out
}
