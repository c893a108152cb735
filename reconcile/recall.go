package reconcile

import (
	"errors"
	"fmt"
	"time"

	"github.com/converge-go/converge/store/checkpoint"
)

// The start from a checkpoint (Options.Checkpoint): a controller whose
// store cannot be listed within Checkpoint.StartAfter of a run's start
// loads its checkpoint and, if it is usable, reconciles toward it
// (the cache installs it: cache.Restore). Until the cache has caught
// up with the store, a key neither holds waits for the store
// (AwaitingStore) rather than being reconciled as deleted: the checkpoint
// says nothing of keys created after it. Once the cache has caught up, those
// keys are queued (storeBack).

// recallCheckpoint is the cache's recall: it loads the checkpoint and
// starts the cache from it if it is usable, and reports whether it did.
func (c *Controller[T]) recallCheckpoint() bool {
	st, reason := c.usableCheckpoint()
	if reason != "" {
		c.keep.refused(reason)
		c.opts.Logger.Warn("store not listed in time and the checkpoint refused; waiting for the store",
			"start_after", c.opts.Checkpoint.StartAfter, "reason", reason)
		return false
	}
	c.keep.using(st)
	c.journal.restoring(c.cache, st.Seen)
	c.cache.Restore(st.Objects, st.Revision, st.Identity)
	c.opts.Logger.Warn("store not listed in time; reconciling toward the checkpoint until it serves",
		"start_after", c.opts.Checkpoint.StartAfter, "revision", st.Revision, "age", time.Since(st.Seen).Round(time.Millisecond),
		"objects", len(st.Objects))
	return true
}

// usableCheckpoint loads the checkpoint and returns it with "", or why it
// cannot be used: none, damaged (logged and counted), unreadable, of
// another prefix, older than MaxAge or seen in the future
// (checkpoint.State.CheckAge), or of another store, if the store
// answered for its identity (each attempt to list reads it first).
func (c *Controller[T]) usableCheckpoint() (checkpoint.State[T], string) {
	opts := c.opts.Checkpoint
	st, err := opts.Store.Load()
	switch {
	case errors.Is(err, checkpoint.ErrNone):
		return st, "no checkpoint written yet"
	case errors.Is(err, checkpoint.ErrDamaged):
		c.keep.damaged()
		c.opts.Logger.Error("checkpoint damaged; ignored", "error", err)
		return st, "damaged: " + err.Error()
	case err != nil:
		return st, "unreadable: " + err.Error()
	case st.Prefix != c.opts.Prefix:
		return st, fmt.Sprintf("of prefix %q, not the controller's %q", st.Prefix, c.opts.Prefix)
	}
	if _, err := st.CheckAge(time.Now(), opts.MaxAge); err != nil {
		return st, err.Error()
	}
	if id := c.cache.AnsweredIdentity(); id != "" && st.Identity != "" && id != st.Identity {
		return st, fmt.Sprintf("of another store (identity %s; the store's is %s)", st.Identity, id)
	}
	return st, ""
}

// storeBack is the cache's back: the cache, started from the checkpoint,
// has caught up with the store. It ends the start (end) under c.mu, which
// every hand-out that waits for the store records under too (finish), and
// queues the keys that waited, to be reconciled as the store has them.
func (c *Controller[T]) storeBack(end func()) {
	c.mu.Lock()
	end()
	keys := c.led.awaiting()
	c.mu.Unlock()
	addAll(c.q(), keys, trigStoreBack)
	c.opts.Logger.Info("the store serves again and the cache has caught up with it; the checkpoint is no longer used",
		"waited", len(keys))
}
