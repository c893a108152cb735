package faultstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

var (
	_ apistore.StatusWriter[int]  = (*Store[int])(nil)
	_ apistore.Replacer[int]      = (*Store[int])(nil)
	_ apistore.Applier[int]       = (*Store[int])(nil)
	_ apistore.PropagatingDeleter = (*Store[int])(nil)
)

// unsupported is the answer to a write of the API-server layer that the
// wrapped store does not offer: an error matching errors.ErrUnsupported and
// store.ErrInvalid, as a served store without the layer answers, given
// before anything is sent, so that nothing is written.
func (s *Store[T]) unsupported(what string) error {
	return fmt.Errorf("%w: %w: faultstore: the wrapped store %T has no %s", store.ErrInvalid, errors.ErrUnsupported, s.inner, what)
}

// UpdateStatus writes value's status alone through the faults, as the
// call OpUpdate, if the wrapped store does (apistore.StatusWriter); else
// it fails, writing nothing, with an error matching errors.ErrUnsupported
// and store.ErrInvalid, which a controller's writer takes for "write the
// whole value".
func (s *Store[T]) UpdateStatus(ctx context.Context, key string, value T, revision int64, guards ...store.Guard) (store.Object[T], error) {
	sw, ok := s.inner.(apistore.StatusWriter[T])
	if !ok {
		return store.Object[T]{}, s.unsupported("status writes (apistore.StatusWriter)")
	}
	ctx, d, err := s.enter(ctx, Call{Op: OpUpdate, Key: key})
	if err != nil {
		return store.Object[T]{}, err
	}
	obj, err := sw.UpdateStatus(ctx, key, value, revision, guards...)
	if err == nil && obj.Revision == revision {
		s.writes.Add(-1) // nothing written: respond counts it back
	}
	return s.respond(d, OpUpdate, obj, 0, err)
}

// Replace is Update that reports whether the write deleted the object
// (apistore.Replacer), through the faults as the call OpUpdate. Over a
// wrapped store that is no Replacer it is Update, and deleted is false.
func (s *Store[T]) Replace(ctx context.Context, key string, value T, revision int64, guards ...store.Guard) (store.Object[T], bool, error) {
	r, ok := s.inner.(apistore.Replacer[T])
	if !ok {
		obj, err := s.Update(ctx, key, value, revision, guards...)
		return obj, false, err
	}
	ctx, d, err := s.enter(ctx, Call{Op: OpUpdate, Key: key})
	if err != nil {
		return store.Object[T]{}, false, err
	}
	obj, deleted, err := r.Replace(ctx, key, value, revision, guards...)
	if err == nil && !deleted && obj.Revision == revision {
		s.writes.Add(-1) // nothing written: respond counts it back
	}
	obj, err = s.respond(d, OpUpdate, obj, 0, err)
	return obj, deleted && err == nil, err
}

// Apply writes what doc states over the object at key (apistore.Applier),
// through the faults as the call OpUpdate, if the wrapped store applies;
// else it fails, writing nothing, with an error matching
// errors.ErrUnsupported and store.ErrInvalid.
func (s *Store[T]) Apply(ctx context.Context, key string, doc T, guards ...store.Guard) (store.Object[T], error) {
	a, ok := s.inner.(apistore.Applier[T])
	if !ok {
		return store.Object[T]{}, s.unsupported("applies (apistore.Applier)")
	}
	ctx, d, err := s.enter(ctx, Call{Op: OpUpdate, Key: key})
	if err != nil {
		return store.Object[T]{}, err
	}
	obj, err := a.Apply(ctx, key, doc, guards...)
	return s.respond(d, OpUpdate, obj, 0, err)
}

// DeleteWith deletes key with propagation p (apistore.PropagatingDeleter)
// through the faults, as the call OpDelete. Over a wrapped store that is
// no PropagatingDeleter, "" and Background are a Delete and marked is
// false; Foreground and Orphan fail, writing nothing, with an error
// matching errors.ErrUnsupported and store.ErrInvalid.
func (s *Store[T]) DeleteWith(ctx context.Context, key string, revision int64, p apistore.Propagation, guards ...store.Guard) (int64, bool, error) {
	pd, ok := s.inner.(apistore.PropagatingDeleter)
	if !ok {
		if p != "" && p != apistore.Background {
			return 0, false, s.unsupported(fmt.Sprintf("%s deletion (apistore.PropagatingDeleter)", p))
		}
		rev, err := s.Delete(ctx, key, revision, guards...)
		return rev, false, err
	}
	ctx, d, err := s.enter(ctx, Call{Op: OpDelete, Key: key})
	if err != nil {
		return 0, false, err
	}
	rev, marked, err := pd.DeleteWith(ctx, key, revision, p, guards...)
	if err == nil && marked && rev == revision {
		s.writes.Add(-1) // already marked, nothing written: respond counts it back
	}
	if _, err = s.respond(d, OpDelete, store.Object[T]{}, rev, err); err != nil {
		return 0, false, err
	}
	return rev, marked, nil
}
