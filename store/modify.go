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

// ModifyOptions tune the read-modify-write loop of Modify and
// CreateOrUpdate. The zero value selects the defaults; a negative value is
// refused with ErrInvalid.
type ModifyOptions struct {
	// Attempts bounds how many rounds are tried before giving up
	// (0: DefaultAttempts).
	Attempts int
	// Backoff is the wait before the second round and MaxBackoff its cap
	// (0: DefaultBackoff, DefaultMaxBackoff); each further round doubles
	// it. The wait is drawn at random between half of it and all of it, so
	// that contenders spread out.
	Backoff, MaxBackoff time.Duration
	// Guards are added to every write. A failed guard ends the loop with
	// ErrGuardFailed; it is not retried.
	Guards []Guard
}

// modifyConfig is ModifyOptions with the defaults filled in.
type modifyConfig struct {
	attempts   int
	backoff    time.Duration
	maxBackoff time.Duration
	guards     []Guard
}

// Modify reads key, passes its value to mutate and writes the result back
// conditioned on the revision it read, retrying the whole round when another
// writer got there first. It returns the object as written.
//
// A result that would change nothing the store keeps (Unchanged: equal to
// the value read, or, on a store that keeps values encoded, encoding to the
// same bytes) is not written: Modify returns the object read, at its
// revision, and makes no watch event. Its conditions are still checked
// (Check): if the key was written or deleted since the read, the round is
// retried as for a conflict; a failed guard is ErrGuardFailed. So a caller
// that asks for what is already there writes nothing, and a controller
// doing so goes idle.
//
// mutate may be called several times, once per round; it must not change cur
// in place (the in-memory store shares it) but return a new value. It is
// always called with the latest value read.
//
//   - key absent: an error matching ErrNotFound; mutate is not called.
//   - mutate returns an error: that error, unchanged; nothing is written.
//   - a write fails with ErrConflict, or ErrNotFound because the key was
//     deleted between read and write: the round is retried after a backoff
//     (ModifyOptions.Backoff); a key still absent on the next read ends the loop with
//     ErrNotFound.
//   - every round of ModifyOptions.Attempts conflicts: an error matching ErrConflict.
//   - ctx ends during a backoff: an error matching ctx's error and the last
//     conflict.
//   - any other store error (ErrInvalid, ErrGuardFailed, ErrUnavailable...) is
//     returned at once.
//
// ModifyOptions.Guards are passed to every Update and Check. A nil ctx, store or
// mutate, or invalid options, are refused with an error matching ErrInvalid.
func Modify[T any](ctx context.Context, s Store[T], key string, mutate func(cur T) (T, error), opts ...ModifyOptions) (Object[T], error) {
	cfg, err := checkModify(ctx, s, mutate == nil, opts)
	if err != nil {
		return Object[T]{}, err
	}
	return retry(ctx, key, cfg, func() (Object[T], error) {
		cur, err := s.Get(ctx, key)
		if err != nil {
			return Object[T]{}, stop(err)
		}
		next, err := mutate(cur.Value)
		if err != nil {
			return Object[T]{}, stop(err)
		}
		return updateRound(ctx, s, key, cur, next, cfg.guards)
	})
}

// CreateOrUpdate makes key hold the value mutate computes: if key is absent,
// mutate(zero value, false) is created; if it exists, mutate(current value,
// true) replaces it, conditioned on the revision read. A round that loses a
// race (ErrExists on create, ErrConflict or ErrNotFound on update) is retried
// like Modify's; every other outcome, invalid input included, is as for
// Modify. As with Modify, an update that would change nothing is not
// written: CreateOrUpdate returns the object read, with its revision,
// once the key's revision and the guards are checked (Check).
func CreateOrUpdate[T any](ctx context.Context, s Store[T], key string, mutate func(cur T, exists bool) (T, error), opts ...ModifyOptions) (Object[T], error) {
	cfg, err := checkModify(ctx, s, mutate == nil, opts)
	if err != nil {
		return Object[T]{}, err
	}
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
		return updateRound(ctx, s, key, cur, next, cfg.guards)
	})
}

// updateRound ends a round that read key's cur and computed next: next is
// written over cur's revision, unless it would change nothing
// (unchangedRound). A key deleted meanwhile is a conflict, retried.
func updateRound[T any](ctx context.Context, s Store[T], key string, cur Object[T], next T, guards []Guard) (Object[T], error) {
	if same, err := Unchanged(s, cur.Value, next); err == nil && same {
		return unchangedRound(ctx, s, key, cur, guards)
	}
	obj, err := s.Update(ctx, key, next, cur.Revision, guards...)
	if errors.Is(err, ErrNotFound) {
		return Object[T]{}, fmt.Errorf("%w (deleted during update): %w", ErrConflict, err)
	}
	return obj, err
}

// unchangedRound ends a round whose write would change nothing (see
// Unchanged): it checks, without writing, that cur is still current and
// every guard holds (Check), and returns cur. A key deleted meanwhile is a
// lost race, retried as a conflict.
func unchangedRound[T any](ctx context.Context, s Store[T], key string, cur Object[T], guards []Guard) (Object[T], error) {
	err := Check(ctx, s, key, cur.Revision, guards...)
	switch {
	case errors.Is(err, ErrNotFound):
		return Object[T]{}, fmt.Errorf("%w (deleted during update): %w", ErrConflict, err)
	case err != nil:
		return Object[T]{}, err
	}
	return cur, nil
}

// newModifyConfig checks the options (at most one, nothing negative) and
// fills in the defaults.
func newModifyConfig(opts []ModifyOptions) (modifyConfig, error) {
	cfg := modifyConfig{attempts: DefaultAttempts, backoff: DefaultBackoff, maxBackoff: DefaultMaxBackoff}
	switch {
	case len(opts) == 0:
		return cfg, nil
	case len(opts) > 1:
		return cfg, fmt.Errorf("%w: %d ModifyOptions given, at most one", ErrInvalid, len(opts))
	}
	o := opts[0]
	if o.Attempts < 0 || o.Backoff < 0 || o.MaxBackoff < 0 {
		return cfg, fmt.Errorf("%w: negative ModifyOptions %+v", ErrInvalid, o)
	}
	if o.Attempts > 0 {
		cfg.attempts = o.Attempts
	}
	if o.Backoff > 0 {
		cfg.backoff = o.Backoff
	}
	if o.MaxBackoff > 0 {
		cfg.maxBackoff = o.MaxBackoff
	}
	cfg.guards = o.Guards
	return cfg, nil
}

// checkModify checks the options of Modify and CreateOrUpdate
// (newModifyConfig) and refuses their nil inputs.
func checkModify[T any](ctx context.Context, s Store[T], nilMutate bool, opts []ModifyOptions) (modifyConfig, error) {
	cfg, err := newModifyConfig(opts)
	switch {
	case err != nil:
		return cfg, err
	case ctx == nil:
		return cfg, fmt.Errorf("%w: nil context", ErrInvalid)
	case nilness.Is(s):
		return cfg, fmt.Errorf("%w: nil store", ErrInvalid)
	case nilMutate:
		return cfg, fmt.Errorf("%w: nil mutate function", ErrInvalid)
	}
	return cfg, nil
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
