package boltstore

// maxCauses bounds the causes a store keeps (causeTable).
const maxCauses = 10_000

// causeTable keeps the causes (store.WithCause) of the latest revisions
// written through this Store that carried one: at most min(maxCauses,
// the history's length) of them, in memory only. A cause is metadata of a
// revision, for the watches that deliver it; the file does not keep it,
// so a reopened store delivers the revisions written before with none.
// Not safe for concurrent use: the hub's lock guards it.
type causeTable struct {
	limit int
	byRev map[int64]string
	order []int64 // revisions in byRev, oldest first (a ring: start, n)
	start int
}

func newCauseTable(history int) causeTable {
	return causeTable{limit: min(history, maxCauses)}
}

// add records the cause of rev, dropping the oldest past the limit.
func (c *causeTable) add(rev int64, cause string) {
	if cause == "" || c.limit <= 0 {
		return
	}
	if c.byRev == nil {
		c.byRev = make(map[int64]string)
	}
	if len(c.order) < c.limit {
		c.order = append(c.order, rev)
	} else {
		delete(c.byRev, c.order[c.start])
		c.order[c.start] = rev
		c.start = (c.start + 1) % len(c.order)
	}
	c.byRev[rev] = cause
}

// of returns the cause of rev, "" if none is kept.
func (c *causeTable) of(rev int64) string { return c.byRev[rev] }
