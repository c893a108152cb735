package reconcile

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

// run follows the store until ctx ends. The backoff between attempts grows
// for as long as no attempt proves the store reachable, so that a store
// that accepts a watch but never serves it does not reset it. A cache
// never filled whose store cannot be listed in time may start from a
// checkpoint (informer_recall.go).
func (in *informer[T]) run(ctx context.Context) {
	in.armRecall()
	failures := 0
	for ctx.Err() == nil {
		proven, err := in.follow(ctx)
		if ctx.Err() != nil {
			return
		}
		if proven {
			failures = 0
		}
		in.setDown(err)
		if errors.Is(err, store.ErrCompacted) || errors.Is(err, errReplaced) || errors.Is(err, errRewound) || errors.Is(err, errUnproven) {
			// The resume point is gone, or means nothing to this store (of
			// another identity, or rolled back below it), or cannot be
			// proven caught up: re-list at once.
			in.mu.Lock()
			in.listed = false
			in.mu.Unlock()
			in.log.Info("re-listing", "error", err)
			continue
		}
		if errors.Is(err, store.ErrLagging) && proven {
			// Fell behind but nothing is lost: resume at once.
			continue
		}
		if in.tryRecall() {
			continue // from the checkpoint; the next attempt resumes after it
		}
		failures++
		d := in.untilRecall(in.backoff(failures))
		in.log.Warn("store unavailable; keeping the cache and retrying", "error", err, "retry_in", d)
		if ctxtime.Sleep(ctx, d) != nil {
			return
		}
	}
}

// errUnproven ends a watch resumed after a checkpoint's revision that
// cannot report progress: nothing would prove the cache caught up with
// the store, so it re-lists instead.
var errUnproven = errors.New("the watch cannot prove the cache caught up with the store")

// follow lists if needed, then watches until the watch ends, returning
// whether the store proved reachable (an event, a progress report or a
// probe answered) and why the watch ended. The cache counts as following
// the store only from that proof on: a Watch call that returns is no proof
// (a backend may return before its watch exists).
func (in *informer[T]) follow(ctx context.Context) (proven bool, _ error) {
	prove := func() {
		if !proven {
			proven = true
			in.setDown(nil)
		}
	}
	after, listed, err := in.resumePoint(ctx)
	if err != nil {
		return false, err
	}
	if listed {
		prove()
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := in.store.Watch(wctx, in.prefix, after)
	if err != nil {
		return proven, fmt.Errorf("watch: %w", err)
	}
	defer w.Stop()
	hb := newHeartbeat(in, w)
	if hb.requester == nil && in.fromCheckpoint() {
		return proven, errUnproven
	}
	if err := hb.ask(wctx); err != nil {
		return proven, err
	}
	tick := time.NewTicker(in.heartbeat)
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
			partial := in.apply(batch, hb.requester == nil)
			hb.heard(batch)
			prove()
			if partial {
				// Prove the last revision complete without waiting for
				// the next write.
				if err := hb.ask(wctx); err != nil {
					return proven, err
				}
			}
		case <-in.wantProgress:
			if err := hb.ask(wctx); err != nil {
				return proven, err
			}
		case <-in.recheck:
			if err := in.sameStore(wctx); err != nil {
				return proven, err
			}
			if err := in.behind(wctx); err != nil {
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

// resumePoint returns the revision to watch after: the cache's, once the
// store is known to be the one the cache reflects (same identity, a
// revision at or above the cache's), or a new list's (listed set).
func (in *informer[T]) resumePoint(ctx context.Context) (after int64, listed bool, _ error) {
	in.mu.RLock()
	resume, after := in.listed, in.complete
	in.mu.RUnlock()
	if resume {
		// A reconnect: resume only a watch of the store the cache reflects,
		// and only after a revision the store has reached.
		if err := in.sameStore(ctx); err != nil {
			return 0, false, err
		}
		return after, false, in.behind(ctx)
	}
	if err := in.list(ctx); err != nil {
		return 0, false, err
	}
	in.mu.RLock()
	defer in.mu.RUnlock()
	return in.complete, true, nil
}

// list reads the store's identity, then lists it, and installs the list.
// While a list missed in time starts the cache from a checkpoint, the
// attempt is cut at that deadline.
func (in *informer[T]) list(ctx context.Context) error {
	if at, ok := in.recallDeadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, at)
		defer cancel()
	}
	// The identity first: a store replaced between the two reads is
	// listed as the old one and found another at the next reconnect,
	// which re-lists it; the other order could take the new store's list
	// for the old one's.
	id, has, err := in.readIdentity(ctx)
	if err != nil {
		return err
	}
	objs, listRev, err := in.store.List(ctx, in.prefix)
	if err != nil {
		return fmt.Errorf("list: %w", err)
	}
	in.replace(objs, listRev, id, has)
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
	in        *informer[T]
	requester store.ProgressRequester
	asked     bool // a progress request is unanswered
	heardAny  bool // something arrived since the last beat
	answered  bool // a progress report arrived since the last beat
	probed    bool // a revision probe succeeded (no requester)
}

func newHeartbeat[T any](in *informer[T], w store.Watcher[T]) *heartbeat[T] {
	r, _ := w.(store.ProgressRequester)
	return &heartbeat[T]{in: in, requester: r}
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
	pctx, cancel := context.WithTimeout(ctx, h.in.heartbeat)
	defer cancel()
	if h.requester == nil {
		if err := h.in.behind(pctx); err != nil {
			if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("%w: %w", store.ErrUnavailable, err)
			}
			return fmt.Errorf("probe: %w", err)
		}
		h.probed = true
		h.in.served()
		return nil
	}
	heard := h.heardAny
	h.heardAny = false
	if h.asked && !heard {
		return fmt.Errorf("%w: %w: no progress report within %v", store.ErrUnavailable, errSilent, h.in.heartbeat)
	}
	if h.answered {
		// The store answers: its revision comes back at once. Whether it
		// serves is for the progress reports to tell.
		h.answered = false
		if err := h.in.behind(pctx); errors.Is(err, errRewound) {
			return err
		}
	}
	return h.ask(ctx)
}
