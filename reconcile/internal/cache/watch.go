package cache

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/converge-go/converge/internal/ctxtime"
	"github.com/converge-go/converge/store"
)

// errSilent ends a watch that answered nothing, neither an event nor a
// progress report, for a whole heartbeat after being asked.
var errSilent = errors.New("watch silent")

// Run follows the store until ctx ends. The backoff between attempts grows
// for as long as no attempt proves the store reachable, so that a store
// that accepts a watch but never serves it does not reset it. A cache
// never filled whose store cannot be listed in time may start from a saved
// state (restore.go).
func (c *Cache[T]) Run(ctx context.Context) {
	c.armRestore()
	failures := 0
	for ctx.Err() == nil {
		proven, err := c.follow(ctx)
		if ctx.Err() != nil {
			return
		}
		if proven {
			failures = 0
		}
		c.setDown(err)
		if errors.Is(err, store.ErrCompacted) || errors.Is(err, errReplaced) || errors.Is(err, errRewound) || errors.Is(err, errUnproven) {
			// The resume point is gone, or means nothing to this store (of
			// another identity, or rolled back below it), or cannot be
			// proven caught up: re-list at once.
			c.mu.Lock()
			c.listed = false
			c.mu.Unlock()
			c.log.Info("re-listing", "error", err)
			continue
		}
		if errors.Is(err, store.ErrLagging) && proven {
			// Fell behind but nothing is lost: resume at once.
			continue
		}
		if c.tryRestore() {
			continue // from the saved state; the next attempt resumes after it
		}
		failures++
		d := c.untilRestore(c.Backoff(failures))
		c.log.Warn("store unavailable; keeping the cache and retrying", "error", err, "retry_in", d)
		if ctxtime.Sleep(ctx, d) != nil {
			return
		}
	}
}

// errUnproven ends a watch resumed after a saved state's revision that
// cannot report progress: nothing would prove the cache caught up with
// the store, so it re-lists instead.
var errUnproven = errors.New("the watch cannot prove the cache caught up with the store")

// follow lists if needed, then watches until the watch ends, returning
// whether the store proved reachable (an event, a progress report or a
// probe answered) and why the watch ended. The cache counts as following
// the store only from that proof on: a Watch call that returns is no proof
// (a backend may return before its watch exists).
func (c *Cache[T]) follow(ctx context.Context) (proven bool, _ error) {
	prove := func() {
		if !proven {
			proven = true
			c.setDown(nil)
		}
	}
	after, listed, err := c.resumePoint(ctx)
	if err != nil {
		return false, err
	}
	if listed {
		prove()
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := c.watch(wctx, after)
	if err != nil {
		return proven, fmt.Errorf("watch: %w", err)
	}
	defer w.Stop()
	hb := newHeartbeat(c, w)
	if hb.requester == nil && c.Restored() {
		return proven, errUnproven
	}
	if err := hb.ask(wctx); err != nil {
		return proven, err
	}
	tick := time.NewTicker(c.heartbeat)
	defer tick.Stop()
	batch := make([]store.Event[T], 0, maxBatch)
	for {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				if err := w.Err(); err != nil {
					return proven, fmt.Errorf("watch: %w", err)
				}
				return proven, fmt.Errorf("watch: %w: ended without an error", store.ErrUnavailable)
			}
			// Apply what has already arrived in one go: one lock for many
			// events, so that the cache keeps up with busy writers.
			batch = append(batch[:0], ev)
			batch = drain(w.Events(), batch)
			partial := c.Apply(batch, hb.requester == nil)
			hb.heard(batch)
			prove()
			if partial {
				// Prove the last revision complete without waiting for
				// the next write.
				if err := hb.ask(wctx); err != nil {
					return proven, err
				}
			}
		case <-c.wantProgress:
			if err := hb.ask(wctx); err != nil {
				return proven, err
			}
		case <-c.recheck:
			if err := c.sameStore(wctx); err != nil {
				return proven, err
			}
			if err := c.behind(wctx); err != nil {
				return proven, err
			}
		case <-tick.C:
			if err := hb.beat(wctx); err != nil {
				return proven, err
			}
			if hb.probed {
				prove()
			}
		}
	}
}

// watch opens the cache's watch after revision after. Over a store that
// can tell what changed since a revision (store.Differ: the in-memory
// store, bolt, views over them) it is store.WatchCatchingUp's, so that a
// watch that falls behind the writers catches up by difference (each key
// changed meanwhile once, at its state now; a key deleted meanwhile as
// Deleted with its last value) instead of ending and making the cache
// re-list; over any other store it is the store's own.
func (c *Cache[T]) watch(ctx context.Context, after int64) (store.Watcher[T], error) {
	if _, ok := c.store.(store.Differ[T]); ok {
		return store.WatchCatchingUp(ctx, c.store, c.prefix, after)
	}
	return c.store.Watch(ctx, c.prefix, after)
}

// resumePoint returns the revision to watch after: the cache's, once the
// store is known to be the one the cache reflects (same identity, a
// revision at or above the cache's), or a new list's (listed set).
func (c *Cache[T]) resumePoint(ctx context.Context) (after int64, listed bool, _ error) {
	c.mu.RLock()
	resume, after := c.listed, c.complete
	c.mu.RUnlock()
	if resume {
		// A reconnect: resume only a watch of the store the cache reflects,
		// and only after a revision the store has reached.
		if err := c.sameStore(ctx); err != nil {
			return 0, false, err
		}
		return after, false, c.behind(ctx)
	}
	if err := c.list(ctx); err != nil {
		return 0, false, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.complete, true, nil
}

// list reads the store's identity, then lists it, and installs the list.
// While a list missed in time starts the cache from a saved state, the
// attempt is cut at that deadline.
func (c *Cache[T]) list(ctx context.Context) error {
	if at, ok := c.restoreDeadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, at)
		defer cancel()
	}
	// The identity first: a store replaced between the two reads is
	// listed as the old one and found another at the next reconnect,
	// which re-lists it; the other order could take the new store's list
	// for the old one's.
	id, has, err := c.readIdentity(ctx)
	if err != nil {
		return err
	}
	objs, listRev, err := c.store.List(ctx, c.prefix)
	if err != nil {
		return fmt.Errorf("list: %w", err)
	}
	c.Replace(objs, listRev, id, has)
	return nil
}

// drain appends the events already waiting on ch, up to maxBatch.
func drain[T any](ch <-chan store.Event[T], batch []store.Event[T]) []store.Event[T] {
	for len(batch) < maxBatch {
		select {
		case ev, ok := <-ch:
			if !ok {
				return batch
			}
			batch = append(batch, ev)
		default:
			return batch
		}
	}
	return batch
}

// maxBatch bounds the watch events applied under one lock.
const maxBatch = 256

// heartbeat proves a watch alive. With a store.ProgressRequester watch it
// asks for progress reports and declares the watch silent when a request
// stays unanswered, with nothing else heard, for a whole heartbeat; without
// one it reads the store's revision each heartbeat, bounded by the
// heartbeat. Either way a store that cannot serve is detected within two
// heartbeats.
type heartbeat[T any] struct {
	c         *Cache[T]
	requester store.ProgressRequester
	asked     bool // a progress request is unanswered
	heardAny  bool // something arrived since the last beat
	answered  bool // a progress report arrived since the last beat
	probed    bool // a revision probe succeeded (no requester)
}

func newHeartbeat[T any](c *Cache[T], w store.Watcher[T]) *heartbeat[T] {
	r, _ := w.(store.ProgressRequester)
	return &heartbeat[T]{c: c, requester: r}
}

// ask requests a progress report unless one is outstanding.
func (h *heartbeat[T]) ask(ctx context.Context) error {
	if h.requester == nil || h.asked {
		return nil
	}
	if err := h.requester.RequestProgress(ctx); err != nil {
		return fmt.Errorf("watch: progress request: %w", err)
	}
	h.asked = true
	return nil
}

// heard records a batch received.
func (h *heartbeat[T]) heard(batch []store.Event[T]) {
	h.heardAny = true
	for i := range batch {
		if batch[i].Type == store.Progress {
			h.asked, h.answered = false, true
		}
	}
}

// beat runs once per heartbeat. Without a requester, and with one after a
// progress report, it reads the store's revision, bounded by the
// heartbeat: below the cache's, the store was rolled back
// behind the open watch (etcd's client resumes a watch across a restart of
// its member), which would wait, silent, for revisions the store has not
// reached, or answer progress at the revision it was resumed after.
func (h *heartbeat[T]) beat(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, h.c.heartbeat)
	defer cancel()
	if h.requester == nil {
		if err := h.c.behind(pctx); err != nil {
			if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("%w: %w", store.ErrUnavailable, err)
			}
			return fmt.Errorf("probe: %w", err)
		}
		h.probed = true
		h.c.served()
		return nil
	}
	heard := h.heardAny
	h.heardAny = false
	if h.asked && !heard {
		return fmt.Errorf("%w: %w: no progress report within %v", store.ErrUnavailable, errSilent, h.c.heartbeat)
	}
	if h.answered {
		// The store answers: its revision comes back at once. Whether it
		// serves is for the progress reports to tell.
		h.answered = false
		if err := h.c.behind(pctx); errors.Is(err, errRewound) {
			return err
		}
	}
	return h.ask(ctx)
}

// served notes that the store has just served (a probe answered).
func (c *Cache[T]) served() {
	c.mu.Lock()
	c.obs.Served()
	c.mu.Unlock()
}
