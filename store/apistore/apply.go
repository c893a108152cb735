package apistore

import (
	"context"
	"fmt"
	"slices"

	"github.com/converge-go/converge/store"
)

// Applier is implemented by a store that applies documents: the layer's
// Store, and a client of a store served with the layer.
type Applier[T any] interface {
	// Apply writes what doc states over the object at key, creating it
	// if absent; see Store.Apply.
	Apply(ctx context.Context, key string, doc T, guards ...store.Guard) (store.Object[T], error)
}

// PartialKind is implemented by a Kind whose values may leave out their
// spec or their status, as JSONKind's documents leave out a member. Apply
// reads documents with it: a document without a spec keeps the stored
// spec, and an object Apply creates takes no status from the document.
// With any other Kind a document always states its spec, and an object
// Apply creates holds the document's status, as Create stores it.
type PartialKind[T any] interface {
	// HasSpec reports whether v states a spec.
	HasSpec(v T) (bool, error)
	// WithoutStatus returns a copy of v without status.
	WithoutStatus(v T) (T, error)
}

var _ Applier[int] = (*Store[int])(nil)

// Apply makes the object at key hold what doc states, and changes nothing
// else: it is what a user's "apply this file" is, with a file that need
// not repeat what controllers set. The rule (see Applied):
//
//   - The spec is doc's (the stored one if the Kind is a PartialKind and
//     doc has none); the status is the stored one, never doc's.
//   - Finalizers doc names are added to the stored ones; owners doc names
//     are added, or replace a stored owner of the same key. No finalizer
//     or owner is ever removed: those a controller set survive an apply of
//     a document that does not name them. To remove one, write the whole
//     object (Update), as a controller does.
//   - The generation and the deletion mark are the layer's (see Update).
//   - An apply never completes a deletion: since it removes no finalizer,
//     a marked object stays marked. A finalizer doc adds to a marked
//     object fails with an error matching ErrDeleting and store.ErrInvalid,
//     and nothing is written.
//
// If key is absent, Apply creates doc there (without its status, for a
// PartialKind), at generation 1. Otherwise it writes against the revision
// it read, and a write that loses a race (store.ErrConflict, the key
// created or deleted in between) is retried against the latest revision,
// as store.CreateOrUpdate does, whose bound on attempts it keeps. Guards
// pass through to every write. A doc whose metadata the Kind cannot read,
// or a stored value's, fails with store.ErrInvalid and writes nothing; so
// does a value the key's Admission refuses (ErrRejected), which runs on
// the value the apply would store, as for Create and Update.
func (s *Store[T]) Apply(ctx context.Context, key string, doc T, guards ...store.Guard) (store.Object[T], error) {
	if err := s.checkWrite(ctx, key, &doc, 0, guards); err != nil {
		return store.Object[T]{}, err
	}
	if _, err := s.meta(doc); err != nil {
		return store.Object[T]{}, err
	}
	// CreateOrUpdate writes through s: Create and Update run the key's
	// admission on the value that would be stored.
	return store.CreateOrUpdate(ctx, s, key, func(cur T, exists bool) (T, error) {
		if !exists {
			return created(s.kind, doc)
		}
		return Applied(s.kind, doc, cur)
	}, store.ModifyOptions{Guards: guards})
}

// Applied returns what applying doc over cur keeps, by Apply's rule, for a
// writer that must compute it itself (a client of a store served without
// the layer): cur's status, generation and mark; doc's spec (cur's if kind
// is a PartialKind and doc has none); cur's finalizers followed by those
// of doc's that cur lacks; cur's owners, each replaced by doc's owner of
// the same key, followed by doc's other owners. The generation is cur's:
// the write that stores the result bumps it if the spec changed.
//
// A finalizer added to a cur marked for deletion fails with an error
// matching ErrDeleting and store.ErrInvalid; metadata the Kind cannot
// read, or that the layer refuses (a finalizer or owner cur lacks that
// checkMeta refuses: see ValidateFinalizer), fails with store.ErrInvalid.
func Applied[T any](kind Kind[T], doc, cur T) (T, error) {
	var zero T
	if kind == nil {
		return zero, fmt.Errorf("%w: apistore: nil kind", store.ErrInvalid)
	}
	dm, err := kind.Meta(doc)
	if err != nil {
		return zero, fmt.Errorf("%w: apistore: metadata: %w", store.ErrInvalid, err)
	}
	stored, err := kind.Meta(cur)
	if err != nil {
		return zero, fmt.Errorf("%w: apistore: the stored value: %w", store.ErrInvalid, err)
	}
	if err := checkMeta(dm, stored); err != nil {
		return zero, err
	}
	if f, ok := added(stored.Finalizers, dm.Finalizers); ok && stored.Deleting() {
		return zero, fmt.Errorf("%w: %w: apistore: finalizer %q added by an apply to an object being deleted", ErrDeleting, store.ErrInvalid, f)
	}
	m := stored
	m.Finalizers = unionFinalizers(stored.Finalizers, dm.Finalizers)
	m.Owners = unionOwners(stored.Owners, dm.Owners)
	spec, err := specSource(kind, doc, cur)
	if err != nil {
		return zero, err
	}
	v, err := kind.Merge(spec, cur)
	if err == nil {
		v, err = kind.WithMeta(v, m)
	}
	if err != nil {
		return zero, fmt.Errorf("%w: apistore: %w", store.ErrInvalid, err)
	}
	return v, nil
}

// specSource returns the value whose spec an apply of doc over cur keeps:
// doc, or cur if the Kind can tell that doc states none.
func specSource[T any](kind Kind[T], doc, cur T) (T, error) {
	pk, ok := kind.(PartialKind[T])
	if !ok {
		return doc, nil
	}
	has, err := pk.HasSpec(doc)
	if err != nil {
		return doc, fmt.Errorf("%w: apistore: %w", store.ErrInvalid, err)
	}
	if has {
		return doc, nil
	}
	return cur, nil
}

// created returns what Apply creates for doc: doc, without its status if
// the Kind can leave it out.
func created[T any](kind Kind[T], doc T) (T, error) {
	pk, ok := kind.(PartialKind[T])
	if !ok {
		return doc, nil
	}
	v, err := pk.WithoutStatus(doc)
	if err != nil {
		return v, fmt.Errorf("%w: apistore: %w", store.ErrInvalid, err)
	}
	return v, nil
}

// unionFinalizers returns stored followed by the finalizers of named that
// it lacks, each once.
func unionFinalizers(stored, named []string) []string {
	out := slices.Clone(stored)
	for _, f := range named {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// unionOwners returns stored with each owner replaced by the one named of
// the same key (the last, if named lists a key twice), followed by the
// owners named whose key stored lacks, each key once.
func unionOwners(stored, named []Owner) []Owner {
	out := slices.Clone(stored)
	for _, o := range named {
		i := slices.IndexFunc(out, func(s Owner) bool { return s.Key == o.Key })
		if i < 0 {
			out = append(out, o)
			continue
		}
		out[i] = o
	}
	return out
}
