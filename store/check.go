package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/converge-go/converge/internal/nilness"
)

// Checker is implemented by a store that checks the conditions of a write
// without writing: what a write that would change nothing (see Unchanged)
// still owes its caller. Every backend of this module implements it (the
// in-memory store, store/boltstore in a read transaction, store/etcdstore
// in a transaction without writes, store/httpstore's client through its
// server), and so do the wrappers that pass it through (View,
// store/faultstore, store/apistore).
//
// A wrapper that adds guards to the writes it passes on (a fenced store)
// must implement Checker and add them to Check as well: Check's fallback
// for a store without it reads through the wrapper and knows nothing of
// guards it would add.
type Checker interface {
	// Check returns nil if key's revision is revision and every guard
	// holds, all at one moment, as an Update of key at revision with
	// guards would require; else the error that Update would return
	// (ErrNotFound, ErrConflict, ErrGuardFailed, ErrUnavailable, ...).
	// It writes nothing, so it makes no revision and no watch event.
	// Invalid arguments are refused with ErrInvalid, as by Update.
	Check(ctx context.Context, key string, revision int64, guards ...Guard) error
}

// Check returns nil if key is still at revision and every guard holds,
// and the error an Update of key at revision with guards would return
// otherwise (ErrNotFound, ErrConflict, ErrGuardFailed, ...); it writes
// nothing. It is how a write that would change nothing is skipped without
// skipping its conditions: a stale revision is still a conflict, and a
// deposed leader's guard still fails.
//
// A store that implements Checker checks atomically. For any other, Check
// reads key and then each guarded key, one Get after another: each
// condition held when it was read, but not necessarily all at one moment.
// That is enough for a write skipped because it would change nothing (it
// writes nothing a guard could protect), and it is the best such a store
// offers; a wrapper that adds guards of its own must implement Checker
// (see Checker). A nil ctx or store, or an invalid key, revision or guard,
// is refused with ErrInvalid.
func Check[T any](ctx context.Context, s Store[T], key string, revision int64, guards ...Guard) error {
	switch {
	case ctx == nil:
		return fmt.Errorf("%w: nil context", ErrInvalid)
	case nilness.Is(s):
		return fmt.Errorf("%w: nil store", ErrInvalid)
	}
	if c, ok := s.(Checker); ok {
		return c.Check(ctx, key, revision, guards...)
	}
	if err := validateCheck(key, revision, guards); err != nil {
		return err
	}
	cur, err := s.Get(ctx, key)
	if err != nil {
		return err
	}
	if cur.Revision != revision {
		return fmt.Errorf("%w: %q is at revision %d, not %d", ErrConflict, key, cur.Revision, revision)
	}
	for _, g := range guards {
		var have int64
		obj, err := s.Get(ctx, g.Key)
		switch {
		case err == nil && g.Created:
			have = obj.CreateRevision
		case err == nil:
			have = obj.Revision
		case !errors.Is(err, ErrNotFound):
			return err
		}
		if have != g.Revision {
			return guardFailed(g, have)
		}
	}
	return nil
}

// validateCheck refuses the arguments of a check that Update would refuse.
func validateCheck(key string, revision int64, guards []Guard) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if err := ValidateRevision(revision); err != nil {
		return err
	}
	return ValidateGuards(guards)
}

// guardFailed is the error of guard g, which found the revision have.
func guardFailed(g Guard, have int64) error {
	what := "revision"
	if g.Created {
		what = "create revision"
	}
	return fmt.Errorf("%w: %s of %q is %d, want %d", ErrGuardFailed, what, g.Key, have, g.Revision)
}

var (
	_ Checker = (*Memory[int])(nil)
	_ Checker = (*View[int])(nil)
)

// Check returns nil if key's revision is revision and every guard holds,
// under the store's lock, and writes nothing (Checker).
func (m *Memory[T]) Check(ctx context.Context, key string, revision int64, guards ...Guard) error {
	if err := validateCheck(key, revision, guards); err != nil {
		return err
	}
	if err := m.begin(ctx); err != nil {
		return err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.precheck(guards); err != nil {
		return err
	}
	_, err := m.expect(key, revision)
	return err
}

// Check checks key's revision and the guards in the byte store (Checker):
// atomically if it implements Checker.
func (v *View[T]) Check(ctx context.Context, key string, revision int64, guards ...Guard) error {
	if err := v.check(ctx); err != nil {
		return err
	}
	return Check(ctx, v.raw, key, revision, guards...)
}
