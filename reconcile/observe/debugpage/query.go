package debugpage

import (
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile"
)

// DefaultPageSize and MaxPageSize bound the keys listed per controller.
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

// Idle names the keys that are not queued (queue state zero) in the
// state filter and in the page.
const Idle = "idle"

// states are the names the state filter accepts, in the order the page
// shows them.
var states = []string{queue.Processing.String(), queue.Waiting.String(), queue.Delayed.String(), Idle}

// sorts are the names of the sort orders the page accepts.
var sorts = []struct {
	name string
	sort reconcile.KeySort
}{
	{"key", reconcile.ByKey},
	{"state", reconcile.ByState},
	{"outcome", reconcile.ByOutcome},
	{"retries", reconcile.ByRetries},
	{"pending", reconcile.ByPendingSince},
}

// query is a request's view: which controller, which keys, which page.
// Unknown or malformed parameters fall back to their defaults: the page
// never refuses a query.
type query struct {
	Controller string   `json:"controller,omitempty"`
	Prefix     string   `json:"prefix,omitempty"`
	States     []string `json:"states,omitempty"`
	Sort       string   `json:"sort"`
	Desc       bool     `json:"desc,omitempty"`
	Page       int      `json:"page"`
	Size       int      `json:"size"`
}

// parseQuery reads the parameters controller, prefix, state (repeatable:
// processing, waiting, delayed, idle), sort (key, state, outcome,
// retries, pending), desc, page (from 1) and size.
func parseQuery(v url.Values, defaultSize int) query {
	q := query{Controller: v.Get("controller"), Prefix: v.Get("prefix"), Sort: "key", Page: 1, Size: defaultSize}
	for _, s := range v["state"] {
		for part := range strings.SplitSeq(s, ",") {
			if stateOf(part) >= 0 && !slices.Contains(q.States, part) {
				q.States = append(q.States, part)
			}
		}
	}
	if s := v.Get("sort"); sortOf(s) >= 0 {
		q.Sort = s
	}
	q.Desc, _ = strconv.ParseBool(v.Get("desc"))
	if n, err := strconv.Atoi(v.Get("page")); err == nil && n > 0 {
		q.Page = n
	}
	if n, err := strconv.Atoi(v.Get("size")); err == nil && n > 0 {
		q.Size = min(n, MaxPageSize)
	}
	return q
}

// keyQuery is q for Controller.Inspect.
func (q query) keyQuery() reconcile.KeyQuery {
	kq := reconcile.KeyQuery{Prefix: q.Prefix, Sort: reconcile.KeySort(sortOf(q.Sort)), Descending: q.Desc, Limit: q.Size}
	for _, s := range q.States {
		kq.States = append(kq.States, queue.State(stateOf(s)))
	}
	// Page numbers past any real page stay bounded: Inspect keeps
	// Offset+Limit keys at most, and there are never more than the keys.
	if q.Page-1 > (int(^uint(0)>>1)-q.Size)/q.Size {
		kq.Offset = int(^uint(0)>>1) - q.Size
	} else {
		kq.Offset = (q.Page - 1) * q.Size
	}
	return kq
}

// values encodes q as URL parameters, with page replaced.
func (q query) values(page int) url.Values {
	v := url.Values{}
	if q.Controller != "" {
		v.Set("controller", q.Controller)
	}
	if q.Prefix != "" {
		v.Set("prefix", q.Prefix)
	}
	for _, s := range q.States {
		v.Add("state", s)
	}
	if q.Sort != "key" {
		v.Set("sort", q.Sort)
	}
	if q.Desc {
		v.Set("desc", "true")
	}
	if page > 1 {
		v.Set("page", strconv.Itoa(page))
	}
	v.Set("size", strconv.Itoa(q.Size))
	return v
}

// stateOf returns the queue.State named s (0 for Idle), or -1.
func stateOf(s string) int {
	switch s {
	case Idle:
		return 0
	case queue.Waiting.String():
		return int(queue.Waiting)
	case queue.Delayed.String():
		return int(queue.Delayed)
	case queue.Processing.String():
		return int(queue.Processing)
	}
	return -1
}

// stateName names a key's queue state for the page.
func stateName(s queue.State) string {
	if s == 0 {
		return Idle
	}
	return s.String()
}

// sortOf returns the reconcile.KeySort named s, or -1.
func sortOf(s string) int {
	for _, o := range sorts {
		if o.name == s {
			return int(o.sort)
		}
	}
	return -1
}
