package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/converge-go/converge/reconcile/dependency"
	"github.com/converge-go/converge/store/checkpoint"
)

// ErrNotSynced is returned by Ready until the initial list is in the cache.
var ErrNotSynced = errors.New("reconcile: cache not synced")

// ErrDegraded matches the error Ready returns while the controller cannot
// follow its primary store.
var ErrDegraded = errors.New("reconcile: store degraded")

// ErrStuck matches the error Healthy returns while a reconcile has run past
// Options.StuckAfter.
var ErrStuck = errors.New("reconcile: reconcile stuck")

// Health is a controller's state for health checks and debug pages.
type Health struct {
	// Synced: the initial list is in the cache.
	Synced bool
	// Degraded says why the controller cannot follow its store (or another
	// source's store) right now; empty when it can. A degraded controller
	// keeps reconciling from its cache. While an entry is for the primary
	// store ("store: ..."), Ready fails with ErrDegraded; Healthy does not.
	Degraded []string
	// Stuck lists the keys whose reconcile has run longer than
	// Options.StuckAfter, in key order, each with its queue state (Since is
	// when the reconcile started).
	Stuck []KeyState
	// Stale counts the keys out of date for longer than Options.StaleAfter
	// (a change not converged, or failing: retrying, or failed terminally
	// and waiting for a change), and StaleKeys names the first
	// maxStaleKeys (16) of them in key order.
	Stale     int
	StaleKeys []string
	// Refused counts the keys refused since New because they are outside
	// the controller's view (not a valid store key, or not under
	// Options.Prefix), each time one was handed in by a Source, a
	// FromStore mapper or Enqueue: such a key is never queued or
	// reconciled, and the code that handed it in has a bug. RefusedKeys
	// names up to 16 of them in key order, from the first 256 distinct
	// keys refused (a key over 128 bytes cut short).
	Refused     int
	RefusedKeys []string
	// Deleting counts the keys marked for deletion whose finalizers have
	// not all been removed (Request.Deleting), and DeletingKeys names the
	// first 16 in key order: a key that stays there has a cleanup that
	// keeps failing (its KeyState says since when, and the last error).
	Deleting     int
	DeletingKeys []string
	// Dependencies is the state of each of Options.Dependencies, in their
	// order: up or down, since when, the failures since its latest
	// successful check and the latest error. While one is down, Ready
	// fails and no key is handed to the reconciler; Healthy does not fail
	// for it, since a restart would not bring the dependency back. A
	// dependency shared with other controllers (the same
	// *dependency.Dependency) has the same state in each of them.
	Dependencies []dependency.State
	// Checkpoint is the state of Options.Checkpoint (the zero Status
	// without one): whether the controller runs from it (Active: it could
	// not list its store in time and has not caught up with it since), of
	// which revision and how old, why it was refused, and its writes.
	Checkpoint checkpoint.Status
	// History reports the times the controller found its store to be
	// another history than the one its cache reflected (another
	// identity, or rolled back below the cache's revision), and re-listed
	// it whole: how many, why, when, and between which revisions.
	History History
	// Ownerless lists the buckets of keys no replica reconciles now, with
	// Options.Shard (Sharder.Ownerless): their keys wait for an owner. It
	// is empty in a healthy deployment except while a crashed replica's
	// buckets are taken over, and empties when they are owned.
	Ownerless []int
	// Revision is the store revision the cache reflects, and Workers how
	// many workers reconcile at once (Options.Workers, or the count of the
	// latest SetWorkers).
	Revision int64
	Workers  int
}

// maxStaleKeys bounds Health.StaleKeys.
const maxStaleKeys = 16

// Health reports the controller's state. It walks the queue's keys once
// without copying them (for the processing ones), and the pending and
// failing keys (for the stale ones). A degraded store or a dependency down
// makes the controller unready (Ready), not unhealthy (Healthy).
func (c *Controller[T]) Health() Health {
	h := Health{Synced: c.cache.IsSynced()}
	if err := c.cache.Health(); err != nil {
		h.Degraded = append(h.Degraded, "store: "+err.Error())
	}
	for i, src := range c.opts.Sources {
		if err := sourceErr(src); err != nil {
			h.Degraded = append(h.Degraded, fmt.Sprintf("source %s: %v", sourceName(src, i), err))
		}
	}
	now := time.Now()
	h.Stale, h.StaleKeys = c.stale(now)
	h.Refused, h.RefusedKeys = c.refused.report()
	c.mu.Lock()
	h.Deleting, h.DeletingKeys = c.led.deletions(maxStaleKeys)
	c.mu.Unlock()
	h.Ownerless = c.ownerless()
	if c.circ != nil {
		h.Dependencies = c.deps.States()
	}
	for _, it := range c.q().View().Processing() {
		if d := now.Sub(it.Since); d > c.opts.StuckAfter {
			h.Stuck = append(h.Stuck, KeyState{Key: it.Key, State: it.State, Since: it.Since, Priority: it.Priority, Triggers: c.triggerNamesOf(it.Tags)})
		}
	}
	slices.SortFunc(h.Stuck, func(a, b KeyState) int { return strings.Compare(a.Key, b.Key) })
	h.Revision = c.cache.Revision()
	h.Workers = c.workers()
	h.Checkpoint = c.keep.report(c.cache.Restored(), now)
	h.History = c.cache.History()
	return h
}

// stale counts the keys out of date for longer than Options.StaleAfter and
// returns the first maxStaleKeys of them in key order. It walks the keys
// with unconverged changes and the failing ones, not every key.
func (c *Controller[T]) stale(now time.Time) (int, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.led.stale(now.Add(-c.opts.StaleAfter), maxStaleKeys)
}

// Ready returns nil while the controller follows its store and its
// dependencies are up: ErrNotSynced until the initial list is in the
// cache (an error matching ErrDegraded, naming the checkpoint's revision
// and age, while the controller runs from its checkpoint instead), then an
// error matching ErrDegraded, and naming why, while Health
// reports the primary store degraded (within two Options.HeartbeatInterval
// of the store becoming unreachable), then an error matching
// dependency.ErrDown, naming each dependency down, since when and its
// latest error, while one of Options.Dependencies is down; nil again once
// the store serves and the dependencies are up. The controller keeps
// reconciling from its cache while the store is degraded, and holds its
// keys while a dependency is down. Another source's store being degraded
// does not make it unready. It takes two locks.
func (c *Controller[T]) Ready() error {
	if c.cache.Restored() {
		st := c.keep.report(true, time.Now())
		why := "catching up with the store"
		if err := c.cache.Health(); err != nil {
			why = err.Error()
		}
		return fmt.Errorf("%w: running from the checkpoint of revision %d (%v old): %s",
			ErrDegraded, st.Revision, st.Age.Round(time.Millisecond), why)
	}
	if !c.cache.IsSynced() {
		return ErrNotSynced
	}
	if err := c.cache.Health(); err != nil {
		return fmt.Errorf("%w: %w", ErrDegraded, err)
	}
	return c.deps.Err()
}

// Healthy returns an error matching ErrStuck while a reconcile has run past
// Options.StuckAfter. Being degraded is not unhealthy (only unready, see
// Ready): restarting would lose the cache the controller keeps healing
// from; nor is a dependency down: restarting would not bring it back.
func (c *Controller[T]) Healthy() error {
	h := c.Health()
	if len(h.Stuck) == 0 {
		return nil
	}
	parts := make([]string, len(h.Stuck))
	for i, s := range h.Stuck {
		parts[i] = fmt.Sprintf("%s for %v", s.Key, time.Since(s.Since))
	}
	return fmt.Errorf("%w: %s", ErrStuck, strings.Join(parts, ", "))
}

// WaitForSync blocks until the initial list is in the cache or ctx ends.
// A controller that runs from its checkpoint is not synced until its cache
// has caught up with its store.
func (c *Controller[T]) WaitForSync(ctx context.Context) error {
	select {
	case <-c.cache.Synced():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// WaitForRevision blocks until the cache reflects store revision rev and
// every key changed at a revision up to rev has had a successful or
// terminal reconcile of an object at least that new (a change superseded
// before a worker got to it included), or until ctx ends. rev may come from
// any write to the store, inside the controller's prefix or not: when the
// cache has seen nothing up to rev, the watch is asked to prove its
// progress (store.ProgressRequester; a store whose watch cannot, returns
// only once a later change in view arrives). Each wake-up rescans the
// pending keys, so it is meant for tests and tools, not hot paths. Changes
// dropped by a predicate are not waited for.
//
// Across a restore: it first reads the store's identity (store.Identifier,
// one call) and its revision (one call). If the store now has another
// identity than the one the cache reflects (restored from a snapshot, or
// replaced), or the same one at a revision below the cache's (rolled back
// to an older copy: another history), rev is taken for a revision of the
// old store, whatever its value: WaitForRevision returns
// only once the cache has re-listed the new store and every key that list
// changed (all of them: see Controller) has had a successful or terminal
// reconcile. The same holds when the cache moves to a store of another
// identity while WaitForRevision waits, and when it is called after that
// re-list with a revision below the list's: rev is then taken for a
// revision of the old store too (a restored store's revisions continue
// above the old one's: store's doc, # Snapshots and restores), so that a
// caller who learns of the restore after the controller did is not told
// its keys are reconciled before they are. A rev at or above the list's
// is one of the new store: after a rollback under the same identity,
// whose revisions do not continue above the old ones, a revision of the
// old history above the list's is waited for as one of the new.
func (c *Controller[T]) WaitForRevision(ctx context.Context, rev int64) error {
	epoch := c.cache.Epoch()
	replaced := c.cache.OtherHistoryNow(ctx)
	for {
		p, advanced := c.cache.ProgressNow() // before c.mu: see complete
		target := rev
		switch {
		case p.Epoch != epoch:
			// The cache moved to another store since the call: its first
			// list reflects every revision of the old one.
			target, replaced = p.EpochRev, false
		case p.Epoch > 0 && rev < p.EpochRev:
			// rev is below the list that began the cache's store: it is
			// taken for a revision of an older one, which that list
			// reflects once its keys are reconciled.
			target = p.EpochRev
		}
		c.mu.Lock()
		progress := c.led.progressed()
		// The ledger moves to another store before the cache publishes
		// its epoch (storeReplaced): until then p is of the old one.
		moving := uint64(c.led.stores) != p.Epoch
		done := !replaced && !moving && p.Published >= target && !c.led.pendingUpTo(target)
		c.mu.Unlock()
		if done {
			return nil
		}
		if p.Published < target {
			// rev may have been written outside the cache's view (another
			// prefix, another program): only the watch can prove it has
			// nothing more to deliver up to rev.
			c.cache.AskProgress()
		}
		select {
		case <-progress:
		case <-advanced:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
