package external

import (
	"net/url"
	"strings"

	"github.com/converge-go/converge/reconcile/kit/prune"
)

// Mark is what the kit asks Create to store beside an external object:
// who made it from which store (prune.Mark), for which key, and under
// which create (Record.Creating), so that List finds an object whose
// create was cut short, and prune only what this operator made.
type Mark struct {
	prune.Mark
	Key    string
	Create string
}

// IsZero reports whether m is the zero Mark: an unmarked object.
func (m Mark) IsZero() bool { return m == Mark{} }

// of reports whether m is the mark mine (this operator, this store)
// leaves for key: the only mark that makes an object the operator's.
func (m Mark) of(mine prune.Mark, key string) bool { return m.Mark == mine && m.Key == key }

const markPrefix = "converge-external "

// String returns m's text form, to store where one string fits (a tag):
// "converge-external owner=O store=S key=K create=C", each part escaped
// as in a URL query, so none holds a space. ParseMark reads it back.
func (m Mark) String() string {
	return markPrefix + "owner=" + url.QueryEscape(m.Owner) + " store=" + url.QueryEscape(m.Store) +
		" key=" + url.QueryEscape(m.Key) + " create=" + url.QueryEscape(m.Create)
}

// ParseMark reads a mark's text form (Mark.String). It reports false for
// any other text (a person's note, a mark cut short), read as no mark:
// its object is never adopted nor pruned. Owner, Store and Key must not
// be empty.
func ParseMark(s string) (Mark, bool) {
	rest, ok := strings.CutPrefix(s, markPrefix)
	if !ok {
		return Mark{}, false
	}
	var parts [4]string
	for i, name := range []string{"owner=", "store=", "key=", "create="} {
		var field string
		field, rest, _ = strings.Cut(rest, " ")
		v, ok := strings.CutPrefix(field, name)
		if !ok {
			return Mark{}, false
		}
		var err error
		if parts[i], err = url.QueryUnescape(v); err != nil {
			return Mark{}, false
		}
	}
	m := Mark{Mark: prune.Mark{Owner: parts[0], Store: parts[1]}, Key: parts[2], Create: parts[3]}
	if m.Owner == "" || m.Store == "" || m.Key == "" || m.String() != s {
		return Mark{}, false
	}
	return m, true
}

// Record is the kit's bookkeeping of one resource, kept in its status
// (Options.Record points to it). A person may write it (convergectl
// status) to answer ErrCreateUnknown: set Name to the object found, or
// clear Creating if there is none.
type Record struct {
	// Name is the external object's name, once the world named it (or,
	// with Options.ExternalName, before the create; the kit then never
	// reads it back). Read back, it names an object the kit touches only
	// if that object carries the operator's mark for the key.
	Name string `json:"name,omitempty"`
	// Creating is the ID of a create recorded before it was made and not
	// yet known to have ended: a create cut short, looked up by the next
	// reconcile before anything else.
	Creating string `json:"creating,omitempty"`
	// Fingerprint is Observation.Fingerprint as last observed or made.
	Fingerprint string `json:"fingerprint,omitempty"`
}
