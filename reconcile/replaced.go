package reconcile

import "github.com/converge-go/converge/queue"

// A store of another identity (informer_identity.go): the store was
// restored from a snapshot, or replaced. Its revisions say nothing of the
// old store's, so the cache re-lists it whole, every key reported, and the
// ledger's revisions start again from it.

// storeReplaced is the cache's onReplaced: the store has another identity
// than the one the cache reflects (a restore, a replacement). Under c.mu,
// so that no reconcile begins in between, the ledger is rebased on the
// new store and its list installed; then every key with a pending change
// is queued, since its change is now one of revision 0 (see
// ledger.storeReplaced) and may be in no list.
func (c *Controller[T]) storeReplaced(install func()) {
	c.mu.Lock()
	c.led.storeReplaced()
	install()
	var pending []string
	c.led.eachPending(func(key string, _ *pendingChange) { pending = append(pending, key) })
	c.mu.Unlock()
	q := c.q()
	for _, key := range pending {
		q.AddWith(key, queue.AddOptions{Tags: trigListed})
	}
	c.opts.Logger.Warn("the store has another identity (restored or replaced); re-listed it whole", "pending", len(pending))
}
