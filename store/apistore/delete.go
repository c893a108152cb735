package apistore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/converge-go/converge/store"
)

// Delete is DeleteWith with Background propagation: an object without
// finalizers is deleted, one with finalizers marked. It returns the
// revision of its write, the delete's or the mark's.
func (s *Store[T]) Delete(ctx context.Context, key string, revision int64, guards ...store.Guard) (int64, error) {
	rev, _, err := s.DeleteWith(ctx, key, revision, Background, guards...)
	return rev, err
}

// DeleteWith deletes key if its revision is still revision (else
// store.ErrConflict, or store.ErrNotFound), with propagation p ("" is
// Background):
//
//   - Background on an object without finalizers deletes it: rev is the
//     revision of the delete, marked is false.
//   - Background on an object with finalizers, and Foreground and Orphan on
//     any object, mark it instead: Meta.Deletion records revision, the
//     time (time.Now, in UTC: the fake clock inside a testing/synctest
//     bubble) and p; Foreground and Orphan add ForegroundFinalizer or
//     OrphanFinalizer to the finalizers. The object stays readable, marked,
//     until its last finalizer is removed (see Update). rev is the
//     revision of the mark, marked is true.
//   - An object already marked is left as it is: its mark never changes,
//     and no finalizer is added to it. rev is its revision, marked is true;
//     nothing is written, so no guard is checked.
//
// An unknown p fails with store.ErrInvalid, a stored value whose metadata
// the Kind cannot read too. Guards pass through to the wrapped store's
// write.
func (s *Store[T]) DeleteWith(ctx context.Context, key string, revision int64, p Propagation, guards ...store.Guard) (rev int64, marked bool, err error) {
	if err := s.checkWrite(ctx, key, nil, revision, guards); err != nil {
		return 0, false, err
	}
	finalizer, err := p.finalizer()
	if err != nil {
		return 0, false, err
	}
	cur, m, err := s.current(ctx, key, revision)
	if err != nil {
		return 0, false, err
	}
	if m.Deleting() {
		return cur.Revision, true, nil
	}
	if finalizer == "" && len(m.Finalizers) == 0 {
		rev, err := s.inner.Delete(ctx, key, revision, guards...)
		return rev, false, err
	}
	if finalizer != "" && !m.HasFinalizer(finalizer) {
		m.Finalizers = append(slices.Clip(m.Finalizers), finalizer)
	}
	if p == "" {
		p = Background
	}
	m.Deletion = &Deletion{Revision: revision, Time: time.Now().UTC(), Propagation: p}
	v, err := s.kind.WithMeta(cur.Value, m)
	if err != nil {
		return 0, false, fmt.Errorf("%w: apistore: %w", store.ErrInvalid, err)
	}
	obj, err := s.inner.Update(ctx, key, v, revision, guards...)
	if err != nil {
		return 0, false, err
	}
	return obj.Revision, true, nil
}

// finalizer returns the finalizer a deletion with propagation p adds: none
// for Background (and ""), or ErrInvalid for an unknown propagation.
func (p Propagation) finalizer() (string, error) {
	switch p {
	case "", Background:
		return "", nil
	case Foreground:
		return ForegroundFinalizer, nil
	case Orphan:
		return OrphanFinalizer, nil
	}
	return "", fmt.Errorf("%w: apistore: unknown propagation %q", store.ErrInvalid, string(p))
}
