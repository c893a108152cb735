package lock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/converge-go/converge/internal/ctxtime"
	"github.com/converge-go/converge/internal/nilness"
	"github.com/converge-go/converge/store"
)

// Lease is a lock shared by processes through a record in a store: the
// process that created the record at the lease's key holds the lease until it
// deletes the record, or until it fails to renew it.
//
//   - Acquire creates the record if it is absent. The fencing token of the
//     term is the record's CreateRevision: unique to the term and larger than
//     every earlier term's, because store revisions only grow.
//   - The holder renews by updating the record, conditioned on its revision,
//     every RenewInterval. It gives up (cancels its Lock's context) when
//     RenewDeadline passes on its own clock since it sent its last successful
//     renewal, and at once if the record was changed or deleted by another.
//   - A contender that finds the record held watches it and takes over only
//     after seeing the same revision for a full TTL on its own clock: it
//     deletes the record, conditioned on that revision, and creates its own.
//   - Release cancels the Lock's context, stops renewing (waiting for a
//     renewal in flight, whose store call it cancels) and deletes the record
//     if it still belongs to the term; watching contenders take over at once.
//     If its ctx ends first or the delete fails it returns the error and may
//     be called again (contenders then take over after the TTL).
//   - Having deleted the record of its own term, a Lease leaves the key to
//     others for RenewInterval/2 (its yield) before it creates the record
//     again, so that a contender told of the release by its watch takes the
//     next term: a holder that releases and campaigns again at once does
//     not win every free moment (see Fairness in the package doc).
//
// See LeaseOptions for the timing bound that keeps two holders from
// overlapping. The store's reads and conditional writes must be linearizable
// (the in-memory store's and etcd's are).
//
// A process that restarts does not recognise the record of its previous
// incarnation (which might still be running): it waits out the TTL like any
// contender, unless that incarnation released the lease.
//
// A Lease is safe for concurrent use; it remembers the revision it has seen
// and since when, so that repeated TryAcquire calls take over an abandoned
// record once it has been unchanged for a TTL.
type Lease struct {
	store store.Store[Record]
	key   string
	opts  LeaseOptions
	log   *slog.Logger
	clock clock

	mu   sync.Mutex
	seen sighting
	// freedAt is when this Lease last deleted the record of its own
	// term (zero: never).
	freedAt time.Time
}

// sighting is the record revision a contender has seen and when it first saw
// it.
type sighting struct {
	rev int64
	at  time.Time
}

var _ Locker = (*Lease)(nil)

// NewLease returns a Lease on the record at key in s. It fails with
// ErrInvalid (and, for a bad key, store.ErrInvalid) if s is nil, key is not a
// valid store key or the options are inconsistent (see LeaseOptions).
func NewLease(s store.Store[Record], key string, opts LeaseOptions) (*Lease, error) {
	if nilness.Is(s) {
		return nil, fmt.Errorf("%w: nil store", ErrInvalid)
	}
	if err := store.ValidateKey(key); err != nil {
		return nil, fmt.Errorf("%w: lease key: %w", ErrInvalid, err)
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Lease{
		store: s,
		key:   key,
		opts:  opts,
		log:   opts.Logger.With("lease", key, "holder", opts.Holder),
	}, nil
}

// Acquire blocks until this process holds the lease, or returns ctx's error
// once ctx ends. While the record is held by another, Acquire watches it (and
// polls if the watch fails), takes it at once when it is released, and takes
// it over once it has been unchanged for a TTL. Within its yield after
// freeing the record itself, it waits before creating it. Store errors are
// logged and retried.
//
// The returned Lock outlives ctx; its context keeps ctx's values.
func (l *Lease) Acquire(ctx context.Context) (Lock, error) {
	if err := l.check(ctx); err != nil {
		return nil, err
	}
	for {
		h, seen, due, err := l.attempt(ctx)
		if h != nil {
			return h, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("lock: acquire %q: %w", l.key, ctx.Err())
		}
		if errors.Is(err, store.ErrInvalid) {
			// Retrying cannot help (a View of a nil store, a record the
			// codec refuses): say so instead of looping.
			return nil, fmt.Errorf("lock: acquire %q: %w", l.key, err)
		}
		if err != nil {
			l.log.Warn("acquire attempt failed; retrying", "err", err)
			seen, due = sighting{}, l.retryDelay()
		}
		if err := l.await(ctx, seen.rev, due); err != nil {
			return nil, fmt.Errorf("lock: acquire %q: %w", l.key, err)
		}
	}
}

// TryAcquire makes one attempt: it takes the lease if the record is absent
// (and this Lease did not free it within its yield), or if this Lease has
// seen it unchanged for a TTL, and otherwise reports false. A store error is returned as is (wrapped with the key).
func (l *Lease) TryAcquire(ctx context.Context) (Lock, bool, error) {
	if err := l.check(ctx); err != nil {
		return nil, false, err
	}
	h, _, _, err := l.attempt(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("lock: try acquire %q: %w", l.key, err)
	}
	if h == nil {
		return nil, false, nil
	}
	return h, true, nil
}

// check refuses a nil context and a Lease not made by NewLease.
func (l *Lease) check(ctx context.Context) error {
	if err := checkContext(ctx); err != nil {
		return err
	}
	if l == nil || l.store == nil {
		return fmt.Errorf("%w: Lease not made by NewLease", ErrInvalid)
	}
	return nil
}

// attempt makes one round: create the record if it is absent, take it over
// if it has been seen unchanged for a TTL, else remember the revision seen.
// Without a new term it returns the sighting and how long until a takeover
// is due (0: try again at once, the record changed under the attempt).
func (l *Lease) attempt(ctx context.Context) (_ *held, _ sighting, due time.Duration, _ error) {
	obj, err := l.store.Get(ctx, l.key)
	if errors.Is(err, store.ErrNotFound) {
		if wait := l.yielding(); wait > 0 {
			return nil, sighting{}, wait, nil // a contender's turn first
		}
		h, err := l.create(ctx)
		return h, sighting{}, 0, err
	}
	if err != nil {
		return nil, sighting{}, 0, err
	}
	seen := l.sight(obj.Revision)
	wait := l.clock.real(max(l.opts.TTL, obj.Value.TTL))
	if left := wait - time.Since(seen.at); left > 0 {
		return nil, seen, left, nil
	}
	_, err = l.store.Delete(ctx, l.key, obj.Revision)
	switch {
	case errors.Is(err, store.ErrConflict):
		return nil, seen, 0, nil
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return nil, seen, 0, err
	}
	l.log.Info("taking over expired lease", "from", obj.Value.Holder, "token", obj.CreateRevision)
	h, err := l.create(ctx)
	return h, sighting{}, 0, err
}

// sight records that the record is at revision rev and returns since when
// this Lease has seen that revision.
func (l *Lease) sight(rev int64) sighting {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen.rev != rev {
		l.seen = sighting{rev: rev, at: time.Now()}
	}
	return l.seen
}

// create makes the record and starts a term, or returns nil if another
// process created it first.
func (l *Lease) create(ctx context.Context) (*held, error) {
	sent := time.Now()
	obj, err := l.store.Create(ctx, l.key, Record{Holder: l.opts.Holder, TTL: l.opts.TTL})
	if errors.Is(err, store.ErrExists) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	l.log.Info("lease acquired", "token", obj.CreateRevision)
	return startTerm(ctx, l, obj, sent), nil
}

// await returns when the record at the lease key changes after revision rev
// (a watch event), when due has passed, or with ctx's error. If rev is 0 or
// the watch fails, it waits for due or the poll interval, whichever is less.
func (l *Lease) await(ctx context.Context, rev int64, due time.Duration) error {
	if due <= 0 {
		return ctx.Err()
	}
	if rev == 0 {
		return ctxtime.Sleep(ctx, due)
	}
	until := time.Now().Add(due)
	w, err := l.store.Watch(ctx, l.key, rev)
	if err != nil {
		l.log.Debug("cannot watch the lease record; polling", "err", err)
		return ctxtime.Sleep(ctx, min(due, l.pollInterval()))
	}
	defer w.Stop()
	timer := time.NewTimer(due)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				l.log.Debug("lease record watch ended; polling", "err", w.Err())
				return ctxtime.Sleep(ctx, min(time.Until(until), l.pollInterval()))
			}
			if ev.Object.Key == l.key {
				return nil
			}
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// pollInterval is how often a contender reads the record when it cannot
// watch it: the holder's renewals come no faster.
func (l *Lease) pollInterval() time.Duration {
	return l.clock.real(l.opts.RenewInterval)
}

// retryDelay is the wait after a failed store call before the next try.
func (l *Lease) retryDelay() time.Duration {
	return l.clock.real(l.opts.RenewInterval / 4)
}

// yield is how long a Lease waits, after deleting the record of its own
// term, before it creates the record again: RenewInterval/2, time for a
// watching contender to be told that the record is gone and to create
// its own.
func (l *Lease) yield() time.Duration {
	return l.clock.real(l.opts.RenewInterval / 2)
}

// freed records that this Lease has just deleted the record of its own
// term: its yield starts.
func (l *Lease) freed() {
	l.mu.Lock()
	l.freedAt = time.Now()
	l.mu.Unlock()
}

// yielding returns how much longer this Lease leaves an absent record to
// others, after it freed it (0: it may create it).
func (l *Lease) yielding() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.freedAt.IsZero() {
		return 0
	}
	return max(0, l.yield()-time.Since(l.freedAt))
}
