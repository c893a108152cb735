package cache

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/converge-go/converge/store"
)

// Another history: the store the cache follows is not the history the
// cache reflects. Either it answers another identity (store.Identifier:
// restored from a snapshot, or replaced; identity.go), or, under the same
// identity, its revision is below the cache's (its file or data restored
// from an older copy, or a saved state newer than the store it was read
// from). Its revisions then say nothing of the ones the cache holds, so
// the cache re-lists it whole: every key it holds is reported as changed,
// every key it lacks as deleted with its last value (Hooks.Replaced).

// History is what the cache reports of the times it found its store to be
// another history.
type History struct {
	// Changes counts them since New; the other fields are of the latest
	// (zero if none).
	Changes int
	// Reason says why: store.AnotherIdentity or store.RolledBack.
	Reason store.HistoryReason
	// At is when the store was re-listed; From is the revision the cache
	// reflected before, To the revision of that list.
	At       time.Time
	From, To int64
}

// errRewound ends a watch, or refuses to resume one, because the store,
// under the same identity, is at a revision below the cache's: a watch
// resumed after the cache's revision would wait, silently, for revisions
// the store may never give the same meaning.
var errRewound = errors.New("the store's revision is below the one the cache reflects: another history")

// behind reads the store's revision and returns errRewound if it is below
// the revision the cache reflected before the read: a store of the same
// history has reached every revision the cache holds, and a revision read
// first could be overtaken by events the cache applies meanwhile. The next
// list then begins another history, unless the cache has re-listed a
// lower revision meanwhile (that list began it).
func (c *Cache[T]) behind(ctx context.Context) error {
	c.mu.RLock()
	seen := c.complete
	c.mu.RUnlock()
	rev, err := c.store.Revision(ctx)
	if err != nil {
		return fmt.Errorf("revision: %w", err)
	}
	if rev >= seen {
		return nil
	}
	c.mu.Lock()
	if c.complete >= seen {
		c.hist.rewound = true
	}
	c.mu.Unlock()
	return fmt.Errorf("%w (store at %d, cache at %d)", errRewound, rev, seen)
}

// OtherHistoryNow reports whether the store, read now, is another history
// than the one the cache reflects: of another identity (replacedBy), or
// of the same one below the cache's revision. If it is, the running watch
// is asked to check it, so that the cache re-lists it at once. A store
// that cannot be read counts as the same history.
func (c *Cache[T]) OtherHistoryNow(ctx context.Context) bool {
	if c.replacedBy(ctx) {
		return true
	}
	if !errors.Is(c.behind(ctx), errRewound) {
		return false
	}
	select {
	case c.recheck <- struct{}{}:
	default:
	}
	return true
}

// histories is what the cache keeps of the store's histories, under
// its mu.
type histories struct {
	// rewound: the store was found below the cache's revision since the
	// latest list; the next list begins another history.
	rewound bool
	report  History
}

// anotherHistory reports whether a list of the store at rev, whose
// identity is id (has false: none known), begins another history than the
// one the cache reflects, and why.
func (c *Cache[T]) anotherHistory(id string, has bool, rev int64) (store.HistoryReason, bool) {
	if c.other(id, has) {
		return store.AnotherIdentity, true
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.hist.rewound || (c.isFilled() && rev < c.complete) {
		return store.RolledBack, true
	}
	return "", false
}

// historyBegun records another history, listed at rev, before its list
// is installed. c.mu is held.
func (c *Cache[T]) historyBegun(why store.HistoryReason, rev int64) {
	h := &c.hist
	h.rewound = false
	h.report = History{Changes: h.report.Changes + 1, Reason: why, At: time.Now(), From: c.complete, To: rev}
}

// History returns what the cache knows of the store's histories.
func (c *Cache[T]) History() History {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.hist.report
}
