package cache

import (
	"slices"

	"github.com/converge-go/converge/store"
)

// ReportChunk is how many changes of a list reach Hooks.Changed at once:
// the keys of a large list's first objects are queued, and reconciled,
// while the rest are still being recorded, and a controller's observe
// holds its lock, which every reconcile's start and end take, for one
// chunk at a time.
const ReportChunk = 256

// Replace installs a list of the store, whose identity is id (has false:
// none known), and reports it: keys new or at another revision are
// reported as changed, keys absent from the list as removed, the rest not
// at all. The list of another history (a store of another identity than
// the cache's, or of the same one below the cache's revision: history.go)
// begins a new epoch (see storeIdentity): every key is reported, since the
// store's revisions say nothing of the ones the cache held, and the
// cache's revisions start again from the list's. A cache started from a
// saved state has then caught up with its store.
//
// Run calls it with each list; only a test of an observer calls it
// otherwise, while Run is not running.
func (c *Cache[T]) Replace(objs []store.Object[T], rev int64, id string, has bool) {
	why, replaced := c.anotherHistory(id, has, rev)
	var changes []Change[T]
	var complete int64
	install := func() { changes, complete = c.install(objs, rev, id, has, why) }
	if replaced && c.hooks.Replaced != nil {
		c.hooks.Replaced(install, why)
	} else {
		install()
	}
	c.report(changes, complete, replaced)
	c.mu.Lock()
	// A list the store answered proves it reachable: clear down before
	// the cache counts as synced, so that no reader sees a synced cache
	// still "not listed yet" (a controller's Ready failing as degraded).
	c.down = nil
	c.mu.Unlock()
	c.caughtUp()
	c.markSynced()
	c.freshListed()
}

// install puts a list in the cache (every key as changed if it begins
// another history, why not "") and returns the changes to report and the
// revision they complete.
func (c *Cache[T]) install(objs []store.Object[T], rev int64, id string, has bool, why store.HistoryReason) ([]Change[T], int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	replaced := why != ""
	if replaced {
		c.historyBegun(why, rev)
	}
	initial := !c.IsSynced()
	changes := c.changes[:0]
	cached := len(c.objects)
	// fresh: the cache was empty and the keys so far strictly increase
	// (a list is sorted by key), so none is cached yet and the lookup of
	// each, a cache miss in a large map, can be spared. A list out of
	// order ends it: from there every key is looked up.
	fresh := cached == 0
	if fresh {
		// Every listed key is new (once, in a list that keeps the
		// contract) and none can be missing: size the map and the changes
		// once instead of growing them key by key.
		c.objects = make(map[string]entry[T], len(objs))
		changes = slices.Grow(changes, len(objs))
	}
	for i := range objs {
		obj := &objs[i]
		fresh = fresh && (i == 0 || objs[i-1].Key < obj.Key)
		var old store.Object[T]
		var ok bool
		if !fresh {
			old, ok = c.object(obj.Key)
		}
		if ok && old.Revision == obj.Revision && !replaced {
			continue
		}
		c.put(*obj, old, ok)
		changes = append(changes, Change[T]{Old: old, HadOld: ok, Cur: *obj, HasCur: true, Initial: initial})
	}
	if cached > 0 {
		changes = c.removeUnlisted(objs, rev, initial, changes)
	}
	c.shrinkLocked()
	// A list reflects its revision whole; another store's starts afresh.
	if replaced {
		c.revision = rev
	} else {
		c.revision = max(c.revision, rev)
	}
	c.complete = c.revision
	c.resetRevKeys()
	c.listed = true
	if has {
		c.ident.id = id
	}
	c.obs.Listed(len(changes) > 0)
	if !c.isFilled() {
		close(c.filled)
	}
	return changes, c.complete
}

// removeUnlisted removes the keys cached before a list at rev and absent
// from it, and appends their changes. c.mu is held.
func (c *Cache[T]) removeUnlisted(objs []store.Object[T], rev int64, initial bool, changes []Change[T]) []Change[T] {
	seen := make(map[string]struct{}, len(objs))
	for i := range objs {
		seen[objs[i].Key] = struct{}{}
	}
	for key, e := range c.objects {
		if _, ok := seen[key]; !ok {
			old := e.object(key)
			old.Revision = rev
			c.remove(old)
			changes = append(changes, Change[T]{Old: old, HadOld: true, Initial: initial})
		}
	}
	return changes
}

// Apply installs a batch of watch events (and progress reports). With
// trustLast, the last event's revision counts as complete (for a watch that
// cannot report progress). It reports whether the newest revision applied
// may still have keys to come.
//
// Run calls it with each batch of its watch; only a test of an observer
// calls it otherwise, while Run is not running.
func (c *Cache[T]) Apply(events []store.Event[T], trustLast bool) (partial bool) {
	c.mu.Lock()
	changes := c.changes[:0]
	caughtUp := false // a progress report proved a restored cache current
	c.obs.Served()
	for i := range events {
		ev := &events[i]
		rev := ev.Object.Revision
		if ev.Type == store.Progress {
			caughtUp = caughtUp || c.rest.active
			if rev >= c.revision {
				c.revision = rev
				c.resetRevKeys()
			}
			c.complete = max(c.complete, rev)
			continue
		}
		if !c.admit(ev) {
			continue
		}
		old, had := c.object(ev.Object.Key)
		c.obs.Applying(ev.Object.Key, old, had)
		if ev.Type == store.Deleted {
			if !had {
				continue
			}
			old.Revision = rev // the last value, at the revision of the delete
			c.remove(old)
			changes = append(changes, Change[T]{Old: old, HadOld: true, Cause: ev.Cause})
			continue
		}
		c.put(ev.Object, old, had)
		changes = append(changes, Change[T]{Old: old, HadOld: had, Cur: ev.Object, HasCur: true, Cause: ev.Cause})
	}
	if trustLast {
		c.complete = c.revision
	}
	partial = c.complete < c.revision
	if !partial {
		c.resetRevKeys()
	}
	c.shrinkLocked()
	complete := c.complete
	c.mu.Unlock()
	c.report(changes, complete, false)
	if caughtUp {
		c.caughtUp()
	}
	return partial
}

// admit reports whether a watch event is one to apply, and notes its
// revision: not if it is already reflected (a resumed watch may overlap a
// list, or repeat a key of the revision it resumed in). c.mu is held.
func (c *Cache[T]) admit(ev *store.Event[T]) bool {
	rev := ev.Object.Revision
	switch {
	case rev <= c.complete:
		return false // already reflected (a resumed watch may overlap a list)
	case rev > c.revision:
		// Events come in revision order: every revision before this
		// one is complete.
		c.complete = max(c.complete, rev-1)
		c.revision = rev
		c.resetRevKeys()
	case rev < c.revision:
		return false // cannot happen: complete >= revision-1
	default: // rev == c.revision: another key of the same revision
		if _, dup := c.revKeys[ev.Object.Key]; dup {
			return false // seen before the watch was resumed
		}
	}
	c.revKeys[ev.Object.Key] = struct{}{}
	return true
}

// report passes changes to Hooks.Changed, then publishes rev: the first
// revision of a new epoch (a store of another identity) if epoch is set,
// even below the revision published before. Only Run's goroutine calls
// it, so changes reach Hooks.Changed in store order.
func (c *Cache[T]) report(changes []Change[T], rev int64, epoch bool) {
	if c.hooks.Listing != nil && len(changes) > ReportChunk {
		c.hooks.Listing(len(changes))
	}
	// A list reaches Changed in chunks, so that the keys of its first
	// objects are queued (and reconciled) before the last are recorded.
	for rest := changes; len(rest) > 0; {
		n := min(len(rest), ReportChunk)
		if c.hooks.Changed != nil {
			c.hooks.Changed(rest[:n])
		}
		rest = rest[n:]
	}
	clear(changes)
	if cap(changes) > 4*maxBatch {
		changes = nil // do not keep a re-list's worth of memory
	}
	c.mu.Lock()
	c.changes = changes[:0]
	if epoch {
		c.ident.epoch++
		c.ident.epochRev = rev
	}
	if rev > c.published || epoch {
		c.published = rev
		if c.advanced != nil {
			close(c.advanced)
			c.advanced = nil
		}
	}
	c.mu.Unlock()
}

// resetRevKeys forgets the keys applied at the current revision; a set
// grown by a large transaction is dropped rather than kept (clearing a map
// costs its capacity, not its length).
func (c *Cache[T]) resetRevKeys() {
	c.obs.Completed()
	if len(c.revKeys) > 64 {
		c.revKeys = make(map[string]struct{})
		return
	}
	clear(c.revKeys)
}
