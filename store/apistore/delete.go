package apistore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/converge-go/converge/store"
)

// Delete is DeleteWith with no propagation given (""): the object's own
// garbage-collector finalizer, if it carries one, says what becomes of
// its children; an object without finalizers is deleted, one with
// finalizers marked. It returns the revision of its write, the delete's or
// the mark's.
func (s *Store[T]) Delete(ctx context.Context, key string, revision int64, guards ...store.Guard) (int64, error) {
	rev, _, err := s.DeleteWith(ctx, key, revision, "", guards...)
	return rev, err
}

// DeleteWith deletes key if its revision is still revision (else
// store.ErrConflict, or store.ErrNotFound), with propagation p, as
// Kubernetes' API server deletes with a propagation policy:
//
//   - The object's finalizers become those Meta.MarkedWith(p) returns: an
//     explicit p replaces the garbage-collector finalizer the object
//     carries (Foreground adds ForegroundFinalizer, Orphan adds
//     OrphanFinalizer, each removing the other; Background removes both),
//     and "" keeps the one it carries, which decides the propagation.
//   - If no finalizer is left, the object is deleted: rev is the revision
//     of the delete, marked is false.
//   - Otherwise it is marked: Meta.Deletion records revision, the time
//     (time.Now, in UTC: the fake clock inside a testing/synctest bubble)
//     and the propagation decided, never "". The object stays readable,
//     marked, until its last finalizer is removed (see Update). rev is the
//     revision of the mark, marked is true.
//   - An object already marked is left as it is, whatever p: its mark and
//     the propagation it records never change, and no finalizer is added
//     to or removed from it. rev is its revision, marked is true; nothing
//     is written, so no guard is checked. A caller that asked for another
//     propagation finds the one in force in Meta.Deletion. (Kubernetes
//     lets a second delete switch the policy; the layer does not, so that
//     a deletion under way never changes its course.)
//
// An unknown p fails with store.ErrInvalid, a stored value whose metadata
// the Kind cannot read too. Guards pass through to the wrapped store's
// write.
func (s *Store[T]) DeleteWith(ctx context.Context, key string, revision int64, p Propagation, guards ...store.Guard) (rev int64, marked bool, err error) {
	if err := s.checkWrite(ctx, key, nil, revision, guards); err != nil {
		return 0, false, err
	}
	if err := p.check(); err != nil {
		return 0, false, err
	}
	cur, m, err := s.current(ctx, key, revision)
	if err != nil {
		return 0, false, err
	}
	if m.Deleting() {
		return cur.Revision, true, nil
	}
	decided, finalizers, err := m.MarkedWith(p)
	if err != nil {
		return 0, false, err
	}
	if len(finalizers) == 0 {
		rev, err := s.inner.Delete(ctx, key, revision, guards...)
		return rev, false, err
	}
	m.Finalizers = finalizers
	m.Deletion = &Deletion{Revision: revision, Time: time.Now().UTC(), Propagation: decided}
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

// MarkedWith returns what a deletion with propagation p does to an object
// of metadata m that is not marked yet: the propagation its mark records
// and the finalizers it keeps (a new slice; nil if none, and the object is
// then deleted at once). It is the rule of Kubernetes' API server:
//
//   - Background, Foreground and Orphan are explicit: the object's
//     garbage-collector finalizers (ForegroundFinalizer, OrphanFinalizer)
//     are removed, and Foreground adds ForegroundFinalizer, Orphan
//     OrphanFinalizer. So an object never carries both.
//   - "" gives none: the object keeps its finalizers, and the
//     garbage-collector finalizer it carries decides: Orphan for
//     OrphanFinalizer, Foreground for ForegroundFinalizer, Background if
//     it carries neither. Of an object that lists both (written around the
//     layer, which refuses that), the first listed decides and the other
//     is removed.
//
// An unknown p fails with store.ErrInvalid.
func (m Meta) MarkedWith(p Propagation) (Propagation, []string, error) {
	if err := p.check(); err != nil {
		return "", nil, err
	}
	if p == "" {
		p = Background
		for _, f := range m.Finalizers {
			if q, ok := propagationOf(f); ok {
				p = q
				break
			}
		}
	}
	own := p.finalizer()
	var out []string
	for _, f := range m.Finalizers {
		if _, gc := propagationOf(f); !gc || f == own && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	if own != "" && !slices.Contains(out, own) {
		out = append(out, own)
	}
	return p, out, nil
}

// check refuses a propagation the layer does not know.
func (p Propagation) check() error {
	switch p {
	case "", Background, Foreground, Orphan:
		return nil
	}
	return fmt.Errorf("%w: apistore: unknown propagation %q", store.ErrInvalid, string(p))
}

// finalizer returns the garbage-collector finalizer a deletion with
// propagation p carries: none for Background (and "").
func (p Propagation) finalizer() string {
	switch p {
	case Foreground:
		return ForegroundFinalizer
	case Orphan:
		return OrphanFinalizer
	}
	return ""
}

// propagationOf returns the propagation whose finalizer f is, if f is a
// garbage-collector finalizer.
func propagationOf(f string) (Propagation, bool) {
	switch f {
	case ForegroundFinalizer:
		return Foreground, true
	case OrphanFinalizer:
		return Orphan, true
	}
	return "", false
}
