package debugpage

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile"
)

// view is what one request shows, encoded as JSON for tools and rendered
// by the template for people. Times are RFC 3339 (UTC, milliseconds),
// durations text as time.Duration prints them ("1.5s"), states and
// outcomes names. Empty times and durations are left out.
type view struct {
	Generated string `json:"generated"`
	Leader    *bool  `json:"leader,omitempty"`
	Term      *int64 `json:"term,omitempty"`
	// Dependencies are the process's own (Options.Dependencies).
	Dependencies []dependencyView `json:"dependencies,omitempty"`
	Query        query            `json:"query"`
	Controllers  []controllerView `json:"controllers"`
	// For the template's form (not encoded).
	Names       []choice `json:"-"`
	StateBoxes  []choice `json:"-"`
	SortOptions []choice `json:"-"`
	JSONLink    string   `json:"-"`
}

// choice is an option of the page's form, or a link.
type choice struct {
	Name    string
	Checked bool
	Count   int
	URL     string
}

type controllerView struct {
	Name      string   `json:"name"`
	Synced    bool     `json:"synced"`
	Degraded  []string `json:"degraded"`
	Store     string   `json:"store"`
	Revision  int64    `json:"revision"`
	Workers   int      `json:"workers"`
	Stuck     []stuck  `json:"stuck"`
	Stale     int      `json:"stale"`
	StaleKeys []string `json:"staleKeys"`
	// Refused and RefusedKeys are Health's: keys handed in outside the
	// controller's view, refused and never reconciled.
	Refused     int      `json:"refused"`
	RefusedKeys []string `json:"refusedKeys"`
	// Deleting and DeletingKeys are Health's: keys marked for deletion
	// whose cleanup (finalizers) has not finished.
	Deleting     int      `json:"deleting"`
	DeletingKeys []string `json:"deletingKeys"`
	// Dependencies are Health.Dependencies: while one is down, no key is
	// handed to the reconciler.
	Dependencies []dependencyView `json:"dependencies,omitempty"`
	// Checkpoint is Health.Checkpoint, for a controller with one: while
	// it is active, the controller reconciles toward it, not its store.
	Checkpoint *checkpointView `json:"checkpoint,omitempty"`
	// History is Health.History, once the controller found its store to
	// be another history (another identity, or rolled back) and re-listed
	// it whole.
	History *historyView `json:"history,omitempty"`
	// Ownerless is Health.Ownerless: the buckets no replica works on.
	Ownerless []int `json:"ownerless,omitempty"`
	// Shard is the controller's shard section, if its Sharder has a
	// Status (ShardStatus).
	Shard *shardView `json:"shard,omitempty"`
	// States counts the keys under the query's prefix by state name.
	States  map[string]int `json:"states"`
	Matched int            `json:"matched"`
	Page    int            `json:"page"`
	Pages   int            `json:"pages"`
	Keys    []keyView      `json:"keys"`
	// Links for the template (not encoded).
	StateLinks []choice `json:"-"`
	Prev, Next string   `json:"-"`
}

type stuck struct {
	Key     string `json:"key"`
	Running string `json:"running"`
}

type keyView struct {
	Key      string `json:"key"`
	State    string `json:"state"`
	Dirty    bool   `json:"dirty,omitempty"`
	Since    string `json:"processingSince,omitempty"`
	Priority int    `json:"priority,omitempty"`
	// Retries is the key's retries (reconcile.Request.Retries): its
	// consecutive backoffs, as its next reconcile logs them. NextRetry is when a delayed key is handed
	// out again (for a processing key, when an add due after it is).
	Retries         int      `json:"retries"`
	NextRetry       string   `json:"nextRetry,omitempty"`
	NextRetryIn     string   `json:"-"`
	LastOutcome     string   `json:"lastOutcome,omitempty"`
	LastError       string   `json:"lastError,omitempty"`
	LastAt          string   `json:"lastAt,omitempty"`
	LastDuration    string   `json:"lastDuration,omitempty"`
	LastRevision    int64    `json:"lastRevision,omitempty"`
	Triggers        []string `json:"triggers,omitempty"`
	LastTriggers    []string `json:"lastTriggers,omitempty"`
	PendingSince    string   `json:"pendingSince,omitempty"`
	PendingFor      string   `json:"pendingFor,omitempty"`
	DeletingSince   string   `json:"deletingSince,omitempty"`
	DeletingFor     string   `json:"deletingFor,omitempty"`
	LastSuccess     string   `json:"lastSuccess,omitempty"`
	SinceSuccess    string   `json:"sinceSuccess,omitempty"`
	FailingSince    string   `json:"failingSince,omitempty"`
	LastConvergence string   `json:"lastConvergence,omitempty"`
	Stale           bool     `json:"stale,omitempty"`
	// TraceID identifies the trace of the key's latest reconcile
	// (reconcile.KeyState.TraceID), with a Tracer.
	TraceID string `json:"traceID,omitempty"`
	// Log is what to grep the controller's logs for: the attributes
	// every log line of the key's reconciles carries (controller and
	// key, and revision for the latest reconcile's lines), as slog's
	// text handler writes them.
	Log string `json:"log"`
	// LogURL links to the caller's log search (Options.LogURL).
	LogURL string `json:"logURL,omitempty"`
}

// controllerOf describes c for q.
func (h *Handler) controllerOf(c Controller, q query, now time.Time) controllerView {
	health := c.Health()
	page := c.Inspect(q.keyQuery())
	v := controllerView{
		Name: c.Name(), Synced: health.Synced, Degraded: orEmpty(health.Degraded), Store: "ok",
		Revision: health.Revision, Workers: health.Workers, Stuck: []stuck{},
		Stale: health.Stale, StaleKeys: orEmpty(health.StaleKeys), Ownerless: health.Ownerless, Shard: shardOf(c),
		Refused: health.Refused, RefusedKeys: orEmpty(health.RefusedKeys),
		Deleting: health.Deleting, DeletingKeys: orEmpty(health.DeletingKeys),
		Dependencies: dependenciesOf(health.Dependencies, now), Checkpoint: checkpointOf(health.Checkpoint), History: historyOf(health.History),
		States: map[string]int{}, Matched: page.Matched, Page: q.Page,
		Pages: max(1, (page.Matched+q.Size-1)/q.Size), Keys: make([]keyView, len(page.Keys)),
	}
	for _, d := range health.Degraded {
		if s, ok := strings.CutPrefix(d, "store: "); ok {
			v.Store = s
		}
	}
	for _, s := range health.Stuck {
		v.Stuck = append(v.Stuck, stuck{Key: s.Key, Running: duration(now.Sub(s.Since))})
	}
	for _, s := range states {
		n := page.States[queue.State(stateOf(s))]
		v.States[s] = n
		only := q
		only.Controller, only.States = v.Name, []string{s}
		v.StateLinks = append(v.StateLinks, choice{Name: s, Count: n, URL: "?" + only.values(1).Encode()})
	}
	for i := range page.Keys {
		v.Keys[i] = h.keyOf(v.Name, &page.Keys[i], now)
	}
	if q.Page > 1 {
		v.Prev = "?" + q.values(min(q.Page-1, v.Pages)).Encode()
	}
	if q.Page < v.Pages {
		v.Next = "?" + q.values(q.Page+1).Encode()
	}
	return v
}

// keyOf describes one key of controller name.
func (h *Handler) keyOf(name string, s *reconcile.KeyState, now time.Time) keyView {
	k := keyView{
		Key: s.Key, State: stateName(s.State), Dirty: s.Dirty, Since: timestamp(s.Since), NextRetry: timestamp(s.Until),
		Priority: s.Priority, Retries: s.Retries, LastOutcome: string(s.LastOutcome), LastError: s.LastError,
		LastAt: timestamp(s.LastAt), LastRevision: s.LastRevision, Triggers: s.Triggers, LastTriggers: s.LastTriggers,
		PendingSince: timestamp(s.PendingSince), LastSuccess: timestamp(s.LastSuccess),
		FailingSince: timestamp(s.FailingSince), Stale: s.Stale, TraceID: s.TraceID,
	}
	if s.Until.After(now) {
		k.NextRetryIn = "in " + duration(s.Until.Sub(now))
	}
	if !s.LastAt.IsZero() {
		k.LastDuration = duration(s.LastDuration)
	}
	if !s.PendingSince.IsZero() {
		k.PendingFor = duration(now.Sub(s.PendingSince))
	}
	if !s.DeletingSince.IsZero() {
		k.DeletingSince, k.DeletingFor = timestamp(s.DeletingSince), duration(now.Sub(s.DeletingSince))
	}
	if !s.LastSuccess.IsZero() {
		k.SinceSuccess = duration(now.Sub(s.LastSuccess))
	}
	if s.LastConvergence > 0 {
		k.LastConvergence = duration(s.LastConvergence)
	}
	k.Log = "controller=" + logValue(name) + " key=" + logValue(s.Key)
	if s.LastRevision != 0 {
		k.Log += " revision=" + strconv.FormatInt(s.LastRevision, 10)
	}
	if h.opts.LogURL != nil {
		k.LogURL = webLink(h.opts.LogURL(name, s.Key, s.LastRevision))
	}
	return k
}

// rfc3339Milli is RFC 3339 to the millisecond.
const rfc3339Milli = "2006-01-02T15:04:05.000Z07:00"

// timestamp formats t as RFC 3339 in UTC to the millisecond, "" for the
// zero time.
func timestamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(rfc3339Milli)
}

// duration formats d as text, rounded to a precision a person reads:
// milliseconds from a second up, microseconds below.
func duration(d time.Duration) string {
	if d >= time.Second || d <= -time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Microsecond).String()
}

// logValue writes s as slog's text handler writes an attribute value:
// quoted when it is empty or holds a space, a quote, '=' or a character
// that is not printable.
func logValue(s string) string {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool {
		return r == ' ' || r == '"' || r == '=' || !strconv.IsPrint(r)
	}) {
		return strconv.Quote(s)
	}
	return s
}

// webLink returns link if it is an absolute http or https URL, else "".
func webLink(link string) string {
	u, err := url.Parse(link)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return ""
	}
	return link
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
