package cache

import (
	"time"

	"github.com/converge-go/converge/store"
)

// The start from a saved state (a controller's checkpoint). A cache never
// filled whose store cannot be listed within Restore.After of a Run's
// start calls Restore.Load, which may install a saved state (Cache.Restore).
// The cache then holds it as if listed at its revision, and its next
// attempt resumes the watch after that revision; it stays restored until
// it has caught up with the store: a list, or a progress report of the
// resumed watch (every change up to the store's revision then delivered).

// Restore is how a cache may start from a saved state. Load nil: never.
type Restore struct {
	// Load is called once per Run, from Run's goroutine, when the cache
	// was never filled and no list succeeded within After of Run's start.
	// It may install a saved state (Cache.Restore), and reports whether
	// it did.
	Load  func() bool
	After time.Duration
	// CaughtUp, if set, is called once a restored cache has caught up with
	// its store, with the function that ends the restored state (the
	// caller calls it under its own lock). Synced is closed after.
	CaughtUp func(end func())
}

// restoring is the cache's part of a start from a saved state: Restore,
// set by New, and the rest guarded by the cache's mu.
type restoring struct {
	Restore
	at     time.Time // this run's deadline for a list
	tried  bool      // Load was called in this run
	active bool      // the cache holds a saved state and has not caught up since
}

// armRestore starts a run's deadline for the list, if the cache was never
// filled.
func (c *Cache[T]) armRestore() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rest.Load != nil && !c.isFilled() {
		c.rest.at, c.rest.tried = time.Now().Add(c.rest.After), false
	}
}

// restoreDeadline returns the deadline of a list that, missed, starts the
// cache from a saved state; ok false if none is due.
func (c *Cache[T]) restoreDeadline() (at time.Time, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	r := &c.rest
	if r.Load == nil || r.tried || r.at.IsZero() || c.isFilled() {
		return time.Time{}, false
	}
	return r.at, true
}

// tryRestore calls Restore.Load once its deadline has passed, and reports
// whether the cache now holds a saved state.
func (c *Cache[T]) tryRestore() bool {
	at, ok := c.restoreDeadline()
	if !ok || time.Now().Before(at) {
		return false
	}
	c.mu.Lock()
	c.rest.tried = true
	c.mu.Unlock()
	return c.rest.Load()
}

// untilRestore shortens a wait before the next attempt to end at the
// deadline of the list, if one is due.
func (c *Cache[T]) untilRestore(d time.Duration) time.Duration {
	if at, ok := c.restoreDeadline(); ok {
		return max(0, min(d, time.Until(at)))
	}
	return d
}

// Restore installs a saved state in the cache, which was never filled:
// objs at rev, of the store of identity id ("" if unknown), as a list
// would (reported as initial changes), the cache filled and restored. The
// store stays down (Health says why) and the next attempt resumes the
// watch after rev. Only Restore.Load calls it.
func (c *Cache[T]) Restore(objs []store.Object[T], rev int64, id string) {
	c.mu.Lock()
	changes := make([]Change[T], 0, len(objs))
	c.objects = make(map[string]entry[T], len(objs))
	for _, obj := range objs {
		c.put(obj, store.Object[T]{}, false)
		changes = append(changes, Change[T]{Cur: obj, HasCur: true, Initial: true})
	}
	c.revision, c.complete = rev, rev
	c.resetRevKeys()
	c.listed = true
	c.ident.id = id
	c.rest.active = true
	c.obs.Restored(rev)
	close(c.filled)
	c.mu.Unlock()
	c.report(changes, rev, false)
	c.freshListed()
}

// Restored reports whether the cache holds a saved state and has not
// caught up with the store since.
func (c *Cache[T]) Restored() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.rest.active
}

// caughtUp ends the restored state, if it is on: the cache has caught up
// with the store, which is then synced. Restore.CaughtUp runs first, so
// that the keys that waited for the store are queued with the cache
// current.
func (c *Cache[T]) caughtUp() {
	if !c.Restored() {
		return
	}
	end := func() {
		c.mu.Lock()
		c.rest.active = false
		c.mu.Unlock()
	}
	if c.rest.CaughtUp != nil {
		c.rest.CaughtUp(end)
	} else {
		end()
	}
	c.markSynced()
}
