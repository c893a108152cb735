package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Another history: the store the cache follows is not the history the
// cache reflects. Either it answers another identity (store.Identifier:
// restored from a snapshot, or replaced; informer_identity.go), or, under
// the same identity, its revision is below the cache's (its file or data
// restored from an older copy, or a checkpoint newer than the store it was
// read from). Its revisions then say nothing of the ones the cache holds,
// so the cache re-lists it whole: every key it holds is reported as
// changed, every key it lacks as deleted with its last value, and the
// ledger is rebased on it (replaced.go). Health.History reports it.

// HistoryReason says why the controller found its store to be another
// history than the one its cache reflected (Health.History). Logs, Health
// and the debug page read this one vocabulary.
type HistoryReason string

const (
	// AnotherIdentity: the store answers another identity than the one
	// the cache was listed from (or its checkpoint was read from): it was
	// restored from a snapshot, or replaced.
	AnotherIdentity HistoryReason = "another identity"
	// RolledBack: the store answers the same identity (or none) at a
	// revision below the one the cache reflects: it was restored from an
	// older copy of its file or data, or the controller's checkpoint is
	// newer than the store.
	RolledBack HistoryReason = "rolled back"
)

// History is what a controller reports of the times it found its store to
// be another history (Health.History). Each time, the cache re-listed the
// store whole, every key of it was reconciled from the store's value, and
// every key it lacks as deleted with the last value the cache held.
type History struct {
	// Changes counts them since New; the other fields are of the latest
	// (zero if none).
	Changes int
	// Reason says why: AnotherIdentity or RolledBack.
	Reason HistoryReason
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
func (in *informer[T]) behind(ctx context.Context) error {
	in.mu.RLock()
	seen := in.complete
	in.mu.RUnlock()
	rev, err := in.store.Revision(ctx)
	if err != nil {
		return fmt.Errorf("revision: %w", err)
	}
	if rev >= seen {
		return nil
	}
	in.mu.Lock()
	if in.complete >= seen {
		in.hist.rewound = true
	}
	in.mu.Unlock()
	return fmt.Errorf("%w (store at %d, cache at %d)", errRewound, rev, seen)
}

// otherHistoryNow reports whether the store, read now, is another history
// than the one the cache reflects: of another identity (replacedBy), or
// of the same one below the cache's revision. If it is, the running watch
// is asked to check it, so that the cache re-lists it at once. A store
// that cannot be read counts as the same history.
func (in *informer[T]) otherHistoryNow(ctx context.Context) bool {
	if in.replacedBy(ctx) {
		return true
	}
	if !errors.Is(in.behind(ctx), errRewound) {
		return false
	}
	select {
	case in.recheck <- struct{}{}:
	default:
	}
	return true
}

// histories is what the informer keeps of the store's histories, under
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
func (in *informer[T]) anotherHistory(id string, has bool, rev int64) (HistoryReason, bool) {
	if in.other(id, has) {
		return AnotherIdentity, true
	}
	in.mu.RLock()
	defer in.mu.RUnlock()
	if in.hist.rewound || (in.isFilled() && rev < in.complete) {
		return RolledBack, true
	}
	return "", false
}

// historyBegun records another history, listed at rev, before its list
// is installed. in.mu is held.
func (in *informer[T]) historyBegun(why HistoryReason, rev int64) {
	h := &in.hist
	h.rewound = false
	h.report = History{Changes: h.report.Changes + 1, Reason: why, At: time.Now(), From: in.complete, To: rev}
}

// history returns what Health reports of the store's histories.
func (in *informer[T]) history() History {
	in.mu.RLock()
	defer in.mu.RUnlock()
	return in.hist.report
}
