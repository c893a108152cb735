package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/converge-go/converge/internal/ctxtime"
	"github.com/converge-go/converge/internal/nilness"
)

// Defaults of the retry loop of Modify and CreateOrUpdate.
const (
	DefaultAttempts   = 10
	DefaultBackoff    = time.Millisecond
	DefaultMaxBackoff = 100 * time.Millisecond
)

// ModifyOption configures Modify and CreateOrUpdate.
type ModifyOption func(*modifyConfig)

type modifyConfig struct {
	attempts   int
	backoff    time.Duration
	maxBackoff time.Duration
	guards     []Guard
}

// WithGuards adds guards to every write Modify or CreateOrUpdate makes. A
// failed guard ends the loop with ErrGuardFailed; it is not retried.
func WithGuards(guards ...Guard) ModifyOption {
	return func(c *modifyConfig) { c.guards = append(c.guards, guards...) }
}

// WithAttempts bounds how many read-modify-write rounds are tried before
// giving up (default DefaultAttempts). Values below 1 select the default.
func WithAttempts(n int) ModifyOption {
	return func(c *modifyConfig) {
		if n >= 1 {
			c.attempts = n
		}
	}
}

// WithBackoff sets the wait before the second round (first) and its cap
// (max); each further round doubles it. The wait is drawn at random between
// half of it and all of it, so that contenders spread out. Non-positive values
// select the defaults (DefaultBackoff, DefaultMaxBackoff).
func WithBackoff(first, max time.Duration) ModifyOption {
	return func(c *modifyConfig) {
		if first > 0 {
			c.backoff = first
		}
		if max > 0 {
			c.maxBackoff = max
		}
	}
}

// Modify reads key, passes its value to mutate and writes the result back
// conditioned on the revision it read, retrying the whole round when another
// writer got there first. It returns the object as written.
//
// mutate may be called several times, once per round; it must not change cur
// in place (the in-memory store shares it) but return a new value. It is
// always called with the latest value read.
//
//   - key absent: an error matching ErrNotFound; mutate is not called.
//   - mutate returns an error: that error, unchanged; nothing is written.
//   - a write fails with ErrConflict, or ErrNotFound because the key was
//     deleted between read and write: the round is retried after a backoff
//     (WithBackoff); a key still absent on the next read ends the loop with
//     ErrNotFound.
//   - every round of WithAttempts conflicts: an error matching ErrConflict.
//   - ctx ends during a backoff: an error matching ctx's error and the last
//     conflict.
//   - any other store error (ErrInvalid, ErrGuardFailed, ErrUnavailable...) is
//     returned at once.
//
// Guards given with WithGuards are passed to every Update. A nil ctx, store
// or mutate is refused with an error matching ErrInvalid; nil options are
// ignored.
func Modify[T any](ctx context.Context, s Store[T], key string, mutate func(cur T) (T, error), opts ...ModifyOption) (Object[T], error) {
	if err := checkModify(ctx, s, mutate == nil); err != nil {
		return Object[T]{}, err
	}
	cfg := newModifyConfig(opts)
	return retry(ctx, key, cfg, func() (Object[T], error) {
		cur, err := s.Get(ctx, key)
		if err != nil {
			return Object[T]{}, stop(err)
		}
		next, err := mutate(cur.Value)
		if err != nil {
			return Object[T]{}, stop(err)
		}
		obj, err := s.Update(ctx, key, next, cur.Revision, cfg.guards...)
		if errors.Is(err, ErrNotFound) {
			return Object[T]{}, fmt.Errorf("%w (deleted during update): %w", ErrConflict, err)
		}
		return obj, err
	})
}

// CreateOrUpdate makes key hold the value mutate computes: if key is absent,
// mutate(zero value, false) is created; if it exists, mutate(current value,
// true) replaces it, conditioned on the revision read. A round that loses a
// race (ErrExists on create, ErrConflict or ErrNotFound on update) is retried
// like Modify's; every other outcome, invalid input included, is as for
// Modify.
func CreateOrUpdate[T any](ctx context.Context, s Store[T], key string, mutate func(cur T, exists bool) (T, error), opts ...ModifyOption) (Object[T], error) {
	if err := checkModify(ctx, s, mutate == nil); err != nil {
		return Object[T]{}, err
	}
	cfg := newModifyConfig(opts)
	return retry(ctx, key, cfg, func() (Object[T], error) {
		cur, err := s.Get(ctx, key)
		exists := err == nil
		if err != nil && !errors.Is(err, ErrNotFound) {
			return Object[T]{}, stop(err)
		}
		next, err := mutate(cur.Value, exists)
		if err != nil {
			return Object[T]{}, stop(err)
		}
		if !exists {
			obj, err := s.Create(ctx, key, next, cfg.guards...)
			if errors.Is(err, ErrExists) {
				return Object[T]{}, fmt.Errorf("%w (created concurrently): %w", ErrConflict, err)
			}
			return obj, err
		}
		obj, err := s.Update(ctx, key, next, cur.Revision, cfg.guards...)
		if errors.Is(err, ErrNotFound) {
			return Object[T]{}, fmt.Errorf("%w (deleted during update): %w", ErrConflict, err)
		}
		return obj, err
	})
}

func newModifyConfig(opts []ModifyOption) modifyConfig {
	cfg := modifyConfig{attempts: DefaultAttempts, backoff: DefaultBackoff, maxBackoff: DefaultMaxBackoff}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	return cfg
}

// checkModify refuses the nil inputs of Modify and CreateOrUpdate.
func checkModify[T any](ctx context.Context, s Store[T], nilMutate bool) error {
	switch {
	case ctx == nil:
		return fmt.Errorf("%w: nil context", ErrInvalid)
	case nilness.Is(s):
		return fmt.Errorf("%w: nil store", ErrInvalid)
	case nilMutate:
		return fmt.Errorf("%w: nil mutate function", ErrInvalid)
	}
	return nil
}

// stopError marks an error that ends the retry loop even if it wraps
// ErrConflict (mutate's own errors are never retried).
type stopError struct{ err error }

func (e stopError) Error() string { return e.err.Error() }
func (e stopError) Unwrap() error { return e.err }

func stop(err error) error { return stopError{err} }

// retry runs round until it returns an error other than ErrConflict, up to the
// configured number of attempts, backing off between rounds.
func retry[T any](ctx context.Context, key string, cfg modifyConfig, round func() (Object[T], error)) (Object[T], error) {
	wait := cfg.backoff
	var lastErr error
	for attempt := 1; ; attempt++ {
		obj, err := round()
		var stopped stopError
		switch {
		case err == nil:
			return obj, nil
		case errors.As(err, &stopped):
			return Object[T]{}, stopped.err
		case !errors.Is(err, ErrConflict):
			return Object[T]{}, err
		}
		lastErr = err
		if attempt == cfg.attempts {
			return Object[T]{}, fmt.Errorf("store: %q: gave up after %d attempts: %w", key, attempt, lastErr)
		}
		if err := ctxtime.Sleep(ctx, wait/2+rand.N(wait/2+1)); err != nil {
			return Object[T]{}, fmt.Errorf("store: %q: %w after %d attempts, last: %w", key, err, attempt, lastErr)
		}
		wait = min(2*wait, cfg.maxBackoff)
	}
}
