package lock

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/converge-go/converge/internal/ctxtime"
	"github.com/converge-go/converge/internal/nilness"
)

// Defaults of ElectorOptions.
const (
	// DefaultRetryDelay is the wait after a failed Acquire.
	DefaultRetryDelay = time.Second
	// DefaultReleaseTimeout bounds the Release an Elector makes when it
	// stops leading.
	DefaultReleaseTimeout = 5 * time.Second
)

// ElectorOptions configure NewElector. The zero value is valid.
type ElectorOptions struct {
	// Logger receives the elector's logs (nil: discard).
	Logger *slog.Logger
	// RetryDelay is the wait after Acquire fails with an error other than
	// the end of Run's context (0: DefaultRetryDelay).
	RetryDelay time.Duration
	// ReleaseTimeout bounds each Release (0: DefaultReleaseTimeout).
	ReleaseTimeout time.Duration
}

// Elector runs a function while its process is the leader: the holder of a
// Locker, such as a Lease.
type Elector struct {
	locker Locker
	opts   ElectorOptions

	running atomic.Bool // a Run is in progress
	mu      sync.Mutex
	current Lock // the lock held while lead runs, else nil
}

// NewElector returns an Elector campaigning on locker. It fails with
// ErrInvalid if locker is nil (or a nil pointer) or an option is negative.
func NewElector(locker Locker, opts ElectorOptions) (*Elector, error) {
	if nilness.Is(locker) {
		return nil, fmt.Errorf("%w: nil locker", ErrInvalid)
	}
	if opts.RetryDelay < 0 || opts.ReleaseTimeout < 0 {
		return nil, fmt.Errorf("%w: elector options: negative RetryDelay (%v) or ReleaseTimeout (%v)",
			ErrInvalid, opts.RetryDelay, opts.ReleaseTimeout)
	}
	if opts.RetryDelay == 0 {
		opts.RetryDelay = DefaultRetryDelay
	}
	if opts.ReleaseTimeout == 0 {
		opts.ReleaseTimeout = DefaultReleaseTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Elector{locker: locker, opts: opts}, nil
}

// Run campaigns for leadership and calls lead while this process leads, with
// a context that is cancelled the moment leadership is in doubt (the Lock's
// context) or ctx ends, and that carries the Lock (FromContext), so that
// work done on behalf of the leadership can fence its writes with its
// Guard. When leadership is lost, Run waits for lead to
// return, releases the lock and campaigns again: lead never runs twice at
// once. Over a Lease, a release that deleted the record leaves it to a
// watching contender for the Lease's yield first (see Fairness in the
// package doc). Errors of Acquire are logged and retried after RetryDelay.
//
// Run returns nil once ctx has ended, after lead has returned and leadership
// has been released. lead is meant to run until its context ends; if it
// returns while still leading, Run releases leadership and returns what lead
// returned. A panic in lead releases leadership and propagates.
//
// Run fails with ErrInvalid if ctx or lead is nil, or on an Elector not
// made by NewElector, and with ErrAlreadyRunning while another Run of the
// Elector is in progress: an Elector runs once at a time, and IsLeader
// reports on that Run. It may be called again once it has returned.
func (e *Elector) Run(ctx context.Context, lead func(ctx context.Context) error) error {
	if err := checkContext(ctx); err != nil {
		return err
	}
	if e == nil || e.locker == nil {
		return fmt.Errorf("%w: Elector not made by NewElector", ErrInvalid)
	}
	if lead == nil {
		return fmt.Errorf("%w: nil lead function", ErrInvalid)
	}
	if !e.running.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: elector", ErrAlreadyRunning)
	}
	defer e.running.Store(false)
	for {
		lk, err := e.locker.Acquire(ctx)
		if ctx.Err() != nil {
			if err == nil {
				e.release(ctx, lk)
			}
			return nil
		}
		if err != nil {
			e.opts.Logger.Warn("campaign failed; retrying", "err", err)
			if ctxtime.Sleep(ctx, e.opts.RetryDelay) != nil {
				return nil
			}
			continue
		}
		lost, err := e.lead(ctx, lk, lead)
		if ctx.Err() != nil {
			return nil
		}
		if !lost {
			return err
		}
		e.opts.Logger.Warn("leadership lost; campaigning again", "token", lk.Token(), "err", err)
	}
}

// lead runs fn while holding lk and releases lk afterwards. lost reports
// that lk was lost while fn ran.
func (e *Elector) lead(ctx context.Context, lk Lock, fn func(context.Context) error) (lost bool, err error) {
	e.setCurrent(lk)
	defer e.setCurrent(nil)
	defer e.release(ctx, lk)
	e.opts.Logger.Info("leading", "token", lk.Token())

	leadCtx, cancel := context.WithCancelCause(context.WithValue(lk.Context(), lockKey{}, lk))
	defer cancel(nil)
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	defer stop()
	err = fn(leadCtx)
	return lk.Context().Err() != nil, err
}

// lockKey carries the current Lock in a lead context.
type lockKey struct{}

// FromContext returns the Lock held by the Elector that called lead with
// ctx (or a context derived from it, even through context.WithoutCancel).
// Writes made on behalf of that leadership carry its Guard, so that the
// store rejects them once another process leads. A nil ctx holds no Lock.
func FromContext(ctx context.Context) (Lock, bool) {
	if ctx == nil {
		return nil, false
	}
	lk, ok := ctx.Value(lockKey{}).(Lock)
	return lk, ok
}

// release releases lk within ReleaseTimeout, logging a failure: it only
// delays the next leader.
func (e *Elector) release(ctx context.Context, lk Lock) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.opts.ReleaseTimeout)
	defer cancel()
	if err := lk.Release(rctx); err != nil {
		e.opts.Logger.Warn("release failed", "token", lk.Token(), "err", err)
	}
}

func (e *Elector) setCurrent(lk Lock) {
	e.mu.Lock()
	e.current = lk
	e.mu.Unlock()
}

// IsLeader reports whether lead is running with leadership not in doubt, for
// health and readiness checks. A nil *Elector never leads.
func (e *Elector) IsLeader() bool {
	if e == nil {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.current != nil && e.current.Context().Err() == nil
}
