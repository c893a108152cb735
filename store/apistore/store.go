package apistore

import (
	"context"
	"errors"
	"fmt"

	"github.com/converge-go/converge/internal/nilness"
	"github.com/converge-go/converge/store"
)

// ErrDeleting: the object is marked for deletion (Meta.Deletion), and the
// write is one a marked object refuses: a create of its key (the error also
// matches store.ErrExists) or a finalizer added to it (the error also
// matches store.ErrInvalid).
var ErrDeleting = errors.New("apistore: being deleted")

// Store is the API-server layer over a store.Store: a store.Store[T] whose
// writes keep the rules of the package doc (generation, status, finalizers,
// the deletion mark), on every backend. It is safe for concurrent use, as
// the store it wraps is: every write is one compare-and-swap of the wrapped
// store against the revision the caller gave, so concurrent writers of a
// key conflict there and never lose an update.
//
// Reads (Get, List, Watch, Revision) pass through untouched. Writes read
// the stored object first and then write at the revision given, so each
// costs a Get more than the wrapped store's write. Writes made to the
// wrapped store directly bypass the layer: the next write through it
// compares with what they left.
//
// Values read from the wrapped store are never changed (the in-memory
// store shares them); a Kind must not change them either.
//
// The zero Store and a nil *Store fail every call with an error matching
// store.ErrInvalid.
type Store[T any] struct {
	inner store.Store[T]
	kind  Kind[T]
	opts  options[T]
}

var (
	_ store.Store[int]   = (*Store[int])(nil)
	_ store.Identifier   = (*Store[int])(nil)
	_ StatusWriter[int]  = (*Store[int])(nil)
	_ Replacer[int]      = (*Store[int])(nil)
	_ PropagatingDeleter = (*Store[int])(nil)
	_ store.Checker      = (*Store[int])(nil)
)

// StatusWriter is implemented by a store that writes an object's status
// alone: the layer's Store, and a client of a store served with the layer.
// A controller's writer checks for it with a type assertion.
type StatusWriter[T any] interface {
	// UpdateStatus writes the status of value over the stored spec and
	// metadata, if the object's revision is still revision; see
	// Store.UpdateStatus.
	UpdateStatus(ctx context.Context, key string, value T, revision int64, guards ...store.Guard) (store.Object[T], error)
}

// Replacer is implemented by a store whose Update may delete the object
// (the last finalizer of a marked object removed) and can say so: the
// layer's Store, and a client of a store served with the layer.
type Replacer[T any] interface {
	// Replace is Update that reports whether it deleted the object; see
	// Store.Replace.
	Replace(ctx context.Context, key string, value T, revision int64, guards ...store.Guard) (obj store.Object[T], deleted bool, err error)
}

// PropagatingDeleter is implemented by a store that deletes with a
// propagation and says whether the object was only marked: the layer's
// Store, and a client of a store served with the layer.
type PropagatingDeleter interface {
	// DeleteWith deletes key at revision with propagation p; see
	// Store.DeleteWith.
	DeleteWith(ctx context.Context, key string, revision int64, p Propagation, guards ...store.Guard) (rev int64, marked bool, err error)
}

// New returns the layer over s for values of kind, with the options given
// (WithAdmission). A nil s or kind (or a nil pointer as either) fails with
// an error matching store.ErrInvalid.
func New[T any](s store.Store[T], kind Kind[T], opts ...Option[T]) (*Store[T], error) {
	switch {
	case nilness.Is(s):
		return nil, fmt.Errorf("%w: apistore: nil store", store.ErrInvalid)
	case nilness.Is(kind):
		return nil, fmt.Errorf("%w: apistore: nil kind", store.ErrInvalid)
	}
	l := &Store[T]{inner: s, kind: kind}
	for _, o := range opts {
		if o != nil {
			o(&l.opts)
		}
	}
	return l, nil
}

// check refuses a Store not made by New and a nil context.
func (s *Store[T]) check(ctx context.Context) error {
	switch {
	case s == nil || s.inner == nil:
		return fmt.Errorf("%w: apistore: Store not made by New", store.ErrInvalid)
	case ctx == nil:
		return fmt.Errorf("%w: apistore: nil context", store.ErrInvalid)
	}
	return nil
}

// Kind returns the Kind the Store reads values with (nil for a Store not
// made by New).
func (s *Store[T]) Kind() Kind[T] {
	if s == nil {
		return nil
	}
	return s.kind
}

// Get returns the wrapped store's object, marked or not.
func (s *Store[T]) Get(ctx context.Context, key string) (store.Object[T], error) {
	if err := s.check(ctx); err != nil {
		return store.Object[T]{}, err
	}
	return s.inner.Get(ctx, key)
}

// List returns the wrapped store's objects under prefix, marked ones
// included.
func (s *Store[T]) List(ctx context.Context, prefix string) ([]store.Object[T], int64, error) {
	if err := s.check(ctx); err != nil {
		return nil, 0, err
	}
	return s.inner.List(ctx, prefix)
}

// Watch is the wrapped store's watch: a mark is an Updated event, the
// removal of the last finalizer of a marked object a Deleted event whose
// value is the marked object as it was stored.
func (s *Store[T]) Watch(ctx context.Context, prefix string, after int64) (store.Watcher[T], error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	return s.inner.Watch(ctx, prefix, after)
}

// Revision returns the wrapped store's revision.
func (s *Store[T]) Revision(ctx context.Context) (int64, error) {
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	return s.inner.Revision(ctx)
}

// Identity returns the wrapped store's identity (store.Identifier), or an
// error matching errors.ErrUnsupported (and store.ErrInvalid) if it has
// none, which a controller takes for a store without an identity.
func (s *Store[T]) Identity(ctx context.Context) (string, error) {
	if err := s.check(ctx); err != nil {
		return "", err
	}
	id, ok := s.inner.(store.Identifier)
	if !ok {
		return "", fmt.Errorf("%w: %w: apistore: the wrapped store %T has no identity", store.ErrInvalid, errors.ErrUnsupported, s.inner)
	}
	return id.Identity(ctx)
}

// meta returns v's metadata as the Kind reads it, unchecked: a write
// checks it against the stored object's (checkMeta).
func (s *Store[T]) meta(v T) (Meta, error) {
	m, err := s.kind.Meta(v)
	if err != nil {
		return Meta{}, fmt.Errorf("%w: apistore: metadata: %w", store.ErrInvalid, err)
	}
	return m, nil
}

// current reads the object at key and requires its revision to be
// revision: the compare-and-swap every write of the layer starts with
// (the wrapped store's write at that revision completes it). It returns
// the object and its metadata.
func (s *Store[T]) current(ctx context.Context, key string, revision int64) (store.Object[T], Meta, error) {
	cur, err := s.inner.Get(ctx, key)
	if err != nil {
		return cur, Meta{}, err
	}
	if cur.Revision != revision {
		return cur, Meta{}, fmt.Errorf("%w: %q is at revision %d, not %d", store.ErrConflict, key, cur.Revision, revision)
	}
	m, err := s.kind.Meta(cur.Value)
	if err != nil {
		return cur, Meta{}, fmt.Errorf("%w: apistore: the stored value of %q: %w", store.ErrInvalid, key, err)
	}
	return cur, m, nil
}

// checkWrite refuses, before anything is read, what the wrapped store's
// write would refuse: a bad key, value, revision or guard.
func (s *Store[T]) checkWrite(ctx context.Context, key string, value *T, revision int64, guards []store.Guard) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	if err := store.ValidateKey(key); err != nil {
		return err
	}
	if value != nil {
		if err := store.ValidateValue(*value); err != nil {
			return err
		}
	}
	if err := store.ValidateRevision(revision); err != nil {
		return err
	}
	return store.ValidateGuards(guards)
}
