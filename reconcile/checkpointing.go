package reconcile

import (
	"context"
	"sync"
	"time"

	"github.com/converge-go/converge/store/checkpoint"
)

// Keeping the checkpoint current (Options.Checkpoint): while the
// controller runs, a goroutine of its own writes what the cache changed
// every Checkpoint.Interval (a list that changed nothing at once: one that
// changed keys waits for the next tick, so that its write yields to the
// reconciles it woke), and once more as the run stops. It captures the changed keys under the cache's lock
// (journal.capture) and writes them without it: neither the cache nor a
// reconcile waits for the file.

// refreshIntervals is how many Checkpoint.Interval a checkpoint with no
// change waits before it is written again to refresh its Seen.
const refreshIntervals = 12

// keeper is the controller's side of its checkpoint: what it reports in
// Health.Checkpoint, under its own lock. Its methods are named for the
// events that change the status; a nil keeper (no checkpoint) reports
// nothing and records nothing.
type keeper[T any] struct {
	opts checkpoint.Options[T]

	mu     sync.Mutex
	status checkpoint.Status // Active and Age are filled in by report
}

func newKeeper[T any](opts checkpoint.Options[T]) *keeper[T] {
	if opts.Store == nil {
		return nil
	}
	return &keeper[T]{opts: opts, status: checkpoint.Status{Enabled: true}}
}

// keepCheckpoint writes the checkpoint until ctx ends, then writes it once
// more.
func (c *Controller[T]) keepCheckpoint(ctx context.Context) {
	tick := time.NewTicker(c.keep.opts.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			c.writeCheckpoint()
			return
		case <-tick.C:
		case <-c.journal.kick:
		}
		c.writeCheckpoint()
	}
}

// writeCheckpoint writes what the cache changed since the latest write, if
// anything; after a failure the next write is a whole one.
func (c *Controller[T]) writeCheckpoint() {
	b, ok := c.journal.capture(c.cache, refreshIntervals*c.keep.opts.Interval)
	if !ok {
		return
	}
	if err := c.keep.opts.Store.Write(b); err != nil {
		c.journal.captureFailed(c.cache)
		c.keep.failed(err)
		c.opts.Logger.Warn("checkpoint not written; the next write is a whole one", "error", err, "revision", b.Revision)
		return
	}
	c.keep.wrote(b)
}

// wrote records a batch written.
func (k *keeper[T]) wrote(b checkpoint.Batch[T]) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.status.Writes++
	k.status.Revision, k.status.Seen = b.Revision, b.Seen
}

// failed records a write that failed.
func (k *keeper[T]) failed(err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.status.Failures++
	k.status.LastError = err.Error()
}

// refused records why the checkpoint was not used.
func (k *keeper[T]) refused(reason string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.status.Refused = reason
}

// damaged counts a damaged checkpoint found.
func (k *keeper[T]) damaged() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.status.Damaged++
}

// using records the checkpoint the cache starts from.
func (k *keeper[T]) using(st checkpoint.State[T]) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.status.Refused = ""
	k.status.Revision, k.status.Seen = st.Revision, st.Seen
}

// report returns the status at now, Active as given.
func (k *keeper[T]) report(active bool, now time.Time) checkpoint.Status {
	if k == nil {
		return checkpoint.Status{}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	st := k.status
	st.Active = active
	if !st.Seen.IsZero() {
		st.Age = now.Sub(st.Seen)
	}
	return st
}
