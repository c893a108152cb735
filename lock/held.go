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
// the last successful write, until the term ends. Each attempt is bounded
// (see attemptTimeout) and a failed one is retried after retryDelay, so a
// write stuck on an unresponsive store node (etcd makes a write sent to a
// follower whose leader just died wait for its request timeout, about
// 5 s) does not outlast the renew deadline.
func (h *held) renew(sent time.Time) {
	defer close(h.exited)
	defer h.watchdog.Stop()
	l := h.lease
	interval := l.clock.real(l.opts.RenewInterval)
	timer := time.NewTimer(interval - time.Since(sent))
	defer timer.Stop()
	// unsure is when the first attempt since the last success that may
	// have been applied without an answer was sent (zero: none).
	var unsure time.Time
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-timer.C:
		}
		sent := time.Now()
		rec := Record{Holder: l.opts.Holder, TTL: l.opts.TTL, Renewals: h.renewals + 1}
		actx, cancel := context.WithTimeout(h.ctx, h.attemptTimeout())
		obj, err := l.store.Update(actx, l.key, rec, h.rev)
		cancel()
		if errors.Is(err, store.ErrConflict) && !unsure.IsZero() {
			// An unanswered attempt may have renewed the record: it is
			// still this term's if its CreateRevision is the token (a
			// takeover deletes it and creates a new one).
			sent = unsure
			obj, err = h.reread()
		}
		switch {
		case err == nil:
			h.rev, h.renewals, unsure = obj.Revision, obj.Value.Renewals, time.Time{}
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
			if unsure.IsZero() {
				unsure = sent
			}
			l.log.Warn("lease renewal failed; retrying", "token", h.token, "err", err)
			timer.Reset(l.retryDelay())
		}
	}
}

// attemptTimeout bounds one renewal: half of the smaller of RenewInterval
// and the time between a renewal being due and the renew deadline, so that
// a stuck attempt leaves time for another before the deadline.
func (h *held) attemptTimeout() time.Duration {
	o := h.lease.opts
	return h.lease.clock.real(min(o.RenewInterval, o.RenewDeadline-o.RenewInterval) / 2)
}

// reread returns the record if it still belongs to this term, or an error
// matching store.ErrConflict if it does not.
func (h *held) reread() (store.Object[Record], error) {
	ctx, cancel := context.WithTimeout(h.ctx, h.attemptTimeout())
	defer cancel()
	obj, err := h.lease.store.Get(ctx, h.lease.key)
	if err != nil {
		return obj, err
	}
	if obj.CreateRevision != h.token {
		return obj, fmt.Errorf("%w: record of token %d, not %d", store.ErrConflict, obj.CreateRevision, h.token)
	}
	return obj, nil
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
// A record it deletes starts this Lease's yield (see Lease.yield).
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
		if err == nil {
			l.freed()
			return nil
		}
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	return err
}
