package prune

import (
	"net/url"
	"strings"
)

// Mark is what an operator stores in the world beside each object it
// creates there (a PostgreSQL COMMENT, a label, a tag): who made it and
// from which store. A Pruner deletes only objects whose mark is its own
// (Pruner.Mark): this operator (Owner, the Pruner's Options.Name) made
// them from this store (Store, the store's identity, store.Identifier).
// An object without a mark, or with another owner or another store in it,
// is never touched: so an operator started on an emptied or replaced
// store, whose desired set reads as empty, deletes nothing it made from
// the old one.
type Mark struct {
	Owner string
	Store string
}

// IsZero reports whether m is the zero Mark: an unmarked object.
func (m Mark) IsZero() bool { return m == Mark{} }

// markPrefix starts every mark's text form.
const markPrefix = "converge owner="

// String returns m's text form, to store in the world where one string
// fits (a COMMENT): "converge owner=OWNER store=STORE", both escaped as in
// a URL query (url.QueryEscape), so that neither holds a space. ParseMark
// reads it back. A world that keeps separate fields (tags) may store
// Owner and Store as they are instead.
func (m Mark) String() string {
	return markPrefix + url.QueryEscape(m.Owner) + " store=" + url.QueryEscape(m.Store)
}

// ParseMark reads a mark's text form (Mark.String). It reports false for
// any other text, so that a comment a person wrote, or a mark cut short,
// is read as no mark at all: its object is never pruned. Only the exact
// form String makes is accepted, with Owner and Store not empty.
func ParseMark(s string) (Mark, bool) {
	rest, ok := strings.CutPrefix(s, markPrefix)
	if !ok {
		return Mark{}, false
	}
	owner, store, ok := strings.Cut(rest, " store=")
	if !ok {
		return Mark{}, false
	}
	var m Mark
	var err1, err2 error
	m.Owner, err1 = url.QueryUnescape(owner)
	m.Store, err2 = url.QueryUnescape(store)
	if err1 != nil || err2 != nil || m.Owner == "" || m.Store == "" || m.String() != s {
		return Mark{}, false
	}
	return m, true
}
