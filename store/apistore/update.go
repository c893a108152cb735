package apistore

import (
	"context"
	"fmt"
	"slices"

	"github.com/converge-go/converge/store"
)

// Update writes value's spec and metadata over the stored status, if the
// object's revision is still revision (else store.ErrConflict, or
// store.ErrNotFound): the writer's finalizers and owners as written, the
// generation as stored, bumped by one exactly when the Kind says the spec
// changed, and the deletion mark as stored, whatever value holds.
//
// On a marked object, adding a finalizer fails with an error matching
// ErrDeleting and store.ErrInvalid, and writes nothing; removing the last
// one deletes the object instead, with a Delete at revision, the same
// compare-and-swap: a write made in between makes it a conflict. Update
// then returns the object as the write left it (no finalizer), with the
// revision of the delete; Replace says which happened.
//
// A write that would store what is stored (spec, status and metadata
// alike; store.Unchanged judges by what the wrapped store keeps) is not
// stored: Update returns the object as stored, at revision, having checked
// without writing that revision is still current and the guards hold
// (store.Check), so it still fails with store.ErrConflict or
// store.ErrGuardFailed, and makes no watch event.
//
// A value whose metadata the Kind cannot read, or a stored one, fails with
// store.ErrInvalid, as does a finalizer or owner the layer refuses and the
// stored object lacks (see ValidateFinalizer); a spec that differs from
// the stored one and that the key's Admission refuses fails with
// ErrRejected (see Admission). Guards pass through to the wrapped store's
// write, so a deposed leader cannot remove a finalizer.
func (s *Store[T]) Update(ctx context.Context, key string, value T, revision int64, guards ...store.Guard) (store.Object[T], error) {
	obj, _, err := s.Replace(ctx, key, value, revision, guards...)
	return obj, err
}

// Replace is Update that reports whether it deleted the object (the last
// finalizer of a marked object removed): then obj holds the value as the
// write left it, with the revision of the delete, and a watch delivers a
// Deleted event at that revision. A controller that tells its own writes'
// echoes from other changes needs to know which it made.
func (s *Store[T]) Replace(ctx context.Context, key string, value T, revision int64, guards ...store.Guard) (obj store.Object[T], deleted bool, err error) {
	if err := s.checkWrite(ctx, key, &value, revision, guards); err != nil {
		return obj, false, err
	}
	if _, err := s.meta(value); err != nil {
		return obj, false, err
	}
	cur, stored, err := s.current(ctx, key, revision)
	if err != nil {
		return obj, false, err
	}
	value, m, err := s.admitUpdate(key, value, cur.Value, stored)
	if err != nil {
		return obj, false, err
	}
	if stored.Deleting() {
		if f, ok := added(stored.Finalizers, m.Finalizers); ok {
			return obj, false, fmt.Errorf("%w: %w: apistore: finalizer %q added to %q", ErrDeleting, store.ErrInvalid, f, key)
		}
	}
	v, err := s.specWrite(value, m, cur.Value, stored)
	if err != nil {
		return obj, false, err
	}
	if stored.Deleting() && len(m.Finalizers) == 0 {
		rev, err := s.inner.Delete(ctx, key, revision, guards...)
		if err != nil {
			return obj, false, err
		}
		return store.Object[T]{Key: key, Value: v, Revision: rev, CreateRevision: cur.CreateRevision}, true, nil
	}
	obj, err = s.write(ctx, cur, v, guards)
	return obj, false, err
}

// write stores v over cur, the object read at the revision the caller
// gave, unless that would change nothing the wrapped store keeps
// (store.Unchanged): then it writes nothing, checks that cur is still
// current and the guards hold (store.Check), and returns cur.
func (s *Store[T]) write(ctx context.Context, cur store.Object[T], v T, guards []store.Guard) (store.Object[T], error) {
	if same, err := store.Unchanged(s.inner, cur.Value, v); err == nil && same {
		if err := store.Check(ctx, s.inner, cur.Key, cur.Revision, guards...); err != nil {
			return store.Object[T]{}, err
		}
		return cur, nil
	}
	return s.inner.Update(ctx, cur.Key, v, cur.Revision, guards...)
}

// specWrite returns what a spec write of value (whose metadata is m) over
// the stored value (whose metadata is stored) keeps: value's spec, m's
// finalizers and owners, the stored status and mark, and the stored
// generation, bumped if the spec changed.
func (s *Store[T]) specWrite(value T, m Meta, storedValue T, stored Meta) (T, error) {
	var zero T
	same, err := s.kind.SameSpec(value, storedValue)
	if err != nil {
		return zero, fmt.Errorf("%w: apistore: %w", store.ErrInvalid, err)
	}
	m.Generation, m.Deletion = stored.Generation, stored.Deletion
	if !same {
		m.Generation++
	}
	merged, err := s.kind.Merge(value, storedValue)
	if err != nil {
		return zero, fmt.Errorf("%w: apistore: %w", store.ErrInvalid, err)
	}
	v, err := s.kind.WithMeta(merged, m)
	if err != nil {
		return zero, fmt.Errorf("%w: apistore: %w", store.ErrInvalid, err)
	}
	return v, nil
}

// added returns a finalizer of after that before does not list.
func added(before, after []string) (string, bool) {
	for _, f := range after {
		if !slices.Contains(before, f) {
			return f, true
		}
	}
	return "", false
}

// UpdateStatus writes the status of value over the stored spec and
// metadata (generation, finalizers, owners and mark as stored), if the
// object's revision is still revision (else store.ErrConflict, or
// store.ErrNotFound). It is allowed on a marked object: a controller
// records its cleanup's progress there. A value whose metadata the Kind
// cannot read fails with store.ErrInvalid, as for every write; a status
// the key's Admission.ValidateStatus refuses, with ErrRejected. Guards
// pass through to the wrapped store's write. A status write that would
// change nothing is not stored, as for Update: it returns the object as
// stored once the revision and the guards are checked.
func (s *Store[T]) UpdateStatus(ctx context.Context, key string, value T, revision int64, guards ...store.Guard) (store.Object[T], error) {
	if err := s.checkWrite(ctx, key, &value, revision, guards); err != nil {
		return store.Object[T]{}, err
	}
	m, err := s.meta(value)
	if err != nil {
		return store.Object[T]{}, err
	}
	cur, stored, err := s.current(ctx, key, revision)
	if err != nil {
		return store.Object[T]{}, err
	}
	if err := checkMeta(m, stored); err != nil {
		return store.Object[T]{}, err
	}
	v, err := s.kind.Merge(cur.Value, value)
	if err != nil {
		return store.Object[T]{}, fmt.Errorf("%w: apistore: %w", store.ErrInvalid, err)
	}
	if err := s.admitStatus(key, v); err != nil {
		return store.Object[T]{}, err
	}
	return s.write(ctx, cur, v, guards)
}

// Check checks key's revision and the guards in the wrapped store, without
// writing (store.Checker; atomically if the wrapped store is a
// store.Checker, as every backend of this module is).
func (s *Store[T]) Check(ctx context.Context, key string, revision int64, guards ...store.Guard) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	return store.Check(ctx, s.inner, key, revision, guards...)
}
