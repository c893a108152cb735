package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/converge-go/converge/store"
)

// held is one term of a Lease: it renews the record until the term is lost
// or released.
type held struct {
	lease  *Lease
	token  int64
	ctx    context.Context
	cancel context.CancelCauseFunc
	// watchdog cancels ctx when the renew deadline passes; each successful
	// renewal pushes it back.
	watchdog *time.Timer
	exited   chan struct{} // closed when the renew goroutine returns

	// Owned by the renew goroutine.
	rev      int64
	renewals int64

	releaseMu sync.Mutex
	released  bool
}

var _ Lock = (*held)(nil)

// startTerm starts renewing the record obj, created by a request sent at
// sent. The term's context keeps ctx's values but not its cancellation.
func startTerm(ctx context.Context, l *Lease, obj store.Object[Record], sent time.Time) *held {
	h := &held{
		lease:  l,
		token:  obj.CreateRevision,
		exited: make(chan struct{}),
		rev:    obj.Revision,
	}
	h.ctx, h.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	h.watchdog = time.AfterFunc(h.untilDeadline(sent), h.deadlinePassed)
	go h.renew(sent)
	return h
}

func (h *held) Context() context.Context { return h.ctx }

func (h *held) Token() int64 { return h.token }

func (h *held) Guard() store.Guard {
	return store.Guard{Key: h.lease.key, Revision: h.token, Created: true}
}

// Release cancels the lock's context, waits for the renew goroutine to stop
// (which waits for a renewal in flight, whose store call is cancelled), then
// deletes the record if it still belongs to this term, so that a watching
// contender takes over at once. A record already taken over is left alone.
// If ctx ends first, or the delete fails, Release returns the error and may
// be called again; contenders then take over after the TTL. Once it has
// succeeded, further calls return nil.
func (h *held) Release(ctx context.Context) error {
	if err := checkContext(ctx); err != nil {
		return err
	}
	h.releaseMu.Lock()
	defer h.releaseMu.Unlock()
	if h.released {
		return nil
	}
	h.end(fmt.Errorf("%w: %q", ErrReleased, h.lease.key))
	select {
	case <-h.exited:
	case <-ctx.Done():
		return fmt.Errorf("lock: release %q: %w", h.lease.key, ctx.Err())
	}
	if err := h.lease.deleteTerm(ctx, h.token); err != nil {
		return fmt.Errorf("lock: release %q: %w", h.lease.key, err)
	}
	h.released = true
	h.lease.log.Info("lease released", "token", h.token)
	return nil
}

// end cancels the term's context with cause, logging a loss the first time.
func (h *held) end(cause error) {
	h.cancel(cause)
	if context.Cause(h.ctx) == cause && errors.Is(cause, ErrLost) {
		h.lease.log.Warn("lease lost", "token", h.token, "cause", cause)
	}
}

func (h *held) deadlinePassed() {
	h.end(fmt.Errorf("%w: %q: no successful renewal within the renew deadline (%v)",
		ErrLost, h.lease.key, h.lease.opts.RenewDeadline))
}

// untilDeadline is how long from now the renew deadline of a write sent at
// sent passes.
func (h *held) untilDeadline(sent time.Time) time.Duration {
	return time.Until(sent.Add(h.lease.clock.real(h.lease.opts.RenewDeadline)))
}

// renew updates the record every RenewInterval, measured from the sending of
// the last successful write, until the term ends.
func (h *held) renew(sent time.Time) {
	defer close(h.exited)
	defer h.watchdog.Stop()
	l := h.lease
	interval := l.clock.real(l.opts.RenewInterval)
	timer := time.NewTimer(interval - time.Since(sent))
	defer timer.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-timer.C:
		}
		sent := time.Now()
		rec := Record{Holder: l.opts.Holder, TTL: l.opts.TTL, Renewals: h.renewals + 1}
		obj, err := l.store.Update(h.ctx, l.key, rec, h.rev)
		switch {
		case err == nil:
			h.rev, h.renewals = obj.Revision, rec.Renewals
			if !h.extend(sent) {
				return
			}
			timer.Reset(interval - time.Since(sent))
		case h.ctx.Err() != nil:
			return
		case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrNotFound):
			h.end(fmt.Errorf("%w: %q was changed by another writer: %w", ErrLost, l.key, err))
			return
		default:
			l.log.Warn("lease renewal failed; retrying", "token", h.token, "err", err)
			timer.Reset(l.retryDelay())
		}
	}
}

// extend moves the renew deadline to RenewDeadline after sent, unless it has
// already passed; it reports whether the term is still held.
func (h *held) extend(sent time.Time) bool {
	if !h.watchdog.Stop() {
		return false
	}
	left := h.untilDeadline(sent)
	if left <= 0 {
		h.deadlinePassed()
		return false
	}
	h.watchdog.Reset(left)
	return true
}

// deleteTerm deletes the record if it still belongs to the term whose token
// is token (its CreateRevision); a record of another term is left alone.
func (l *Lease) deleteTerm(ctx context.Context, token int64) error {
	const attempts = 3
	var err error
	for range attempts {
		var obj store.Object[Record]
		obj, err = l.store.Get(ctx, l.key)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if obj.CreateRevision != token {
			return nil
		}
		_, err = l.store.Delete(ctx, l.key, obj.Revision)
		if err == nil || errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	return err
}
