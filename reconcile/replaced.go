package reconcile

import "github.com/converge-go/converge/store"

// Another history (history.go): the store has another identity (restored
// from a snapshot, or replaced), or the same one below the cache's
// revision (rolled back). Its revisions say nothing of the ones the cache
// held, so the cache re-lists it whole, every key reported, and the
// ledger's revisions start again from it.

// historyMessage is what the controller logs when its store is another
// history for reason r.
func historyMessage(r store.HistoryReason) string {
	if r == store.RolledBack {
		return "the store is at a revision below the cache's (rolled back to an older copy); re-listed it whole as another history"
	}
	return "the store has another identity (restored or replaced); re-listed it whole"
}

// storeReplaced is the cache's Hooks.Replaced: the store is another history
// than the one the cache reflects, for reason why. Under c.mu,
// so that no reconcile begins in between, the ledger is rebased on the
// new store and its list installed; then every key with a pending change
// is queued, since its change is now one of revision 0 (see
// ledger.storeReplaced) and may be in no list.
func (c *Controller[T]) storeReplaced(install func(), why store.HistoryReason) {
	c.mu.Lock()
	c.led.storeReplaced()
	install()
	pending := c.led.pendingKeys()
	c.mu.Unlock()
	addAll(c.q(), pending, trigListed)
	h := c.cache.History()
	c.opts.Logger.Warn(historyMessage(why), "reason", string(why), "from", h.From, "to", h.To, "pending", len(pending))
}
