package resource

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/store"
)

// Finalize is a reconcile's finalizer step, for a Resource kept in a store
// wrapped by store/apistore (where deleting an object with finalizers only
// marks it). Call it first, before any side effect:
//
//	obj, deleting, err := resource.Finalize(ctx, req, "example.com/drop", drop)
//	if deleting || err != nil {
//		return reconcile.Result{}, err
//	}
//	// act on the world for obj, then resource.WriteStatus(ctx, req.Store, obj, ...)
//
// While the object is not being deleted, Finalize makes sure it carries
// the finalizer name, adding it through req.Store (a fenced write whose
// echo does not wake the key) before returning, so that no side effect is
// ever made for an object whose deletion could then go unnoticed: it
// returns the object to act on and deleting false. An error (a conflict
// with a newer write, say) is returned as it is; the controller
// reconciles the newer object.
//
// When the object is marked for deletion (req.Deleting) and carries the
// finalizer, Finalize runs cleanup; if cleanup fails, its error is
// returned and the finalizer stays, so the key is retried with backoff and
// the object stays marked (Health.Deleting shows it). Once cleanup
// succeeds it removes the finalizer — retried against the newer object if
// another write conflicts, and never on an object created anew under the
// same key — which, for the last finalizer, removes the object. It returns
// deleting true whenever the object is being deleted or is gone
// (req.Deleted), and then the reconcile has nothing more to do.
//
// cleanup must be idempotent and must treat what is already gone as done:
// a crash after cleanup and before the finalizer's removal runs it again.
func Finalize[Spec, Status any](ctx context.Context, req reconcile.Request[*Resource[Spec, Status]], name string, cleanup func(ctx context.Context) error) (obj store.Object[*Resource[Spec, Status]], deleting bool, err error) {
	obj = req.Object
	switch {
	case name == "":
		return obj, false, fmt.Errorf("%w: Finalize: empty finalizer name", store.ErrInvalid)
	case req.Deleted:
		return obj, true, nil
	case req.Store == nil || obj.Value == nil:
		return obj, false, fmt.Errorf("%w: Finalize: %q: a request without a store or an object", store.ErrInvalid, req.Key)
	case req.Deleting || obj.Value.Deleting():
		if !obj.Value.HasFinalizer(name) {
			return obj, true, nil
		}
		if err := cleanup(ctx); err != nil {
			return obj, true, err
		}
		return obj, true, removeFinalizer(ctx, req.Store, obj, name)
	case obj.Value.HasFinalizer(name):
		return obj, false, nil
	}
	next := obj.Value.clone()
	next.Finalizers = append(next.Finalizers, name)
	written, err := req.Store.Update(ctx, obj.Key, next, obj.Revision)
	if err != nil {
		return obj, false, err
	}
	return written, false, nil
}

// removeFinalizer removes name from the object obj, retrying against the
// newer object on a conflict, as long as that is the same object (the same
// CreateRevision) and still carries name.
func removeFinalizer[Spec, Status any](ctx context.Context, s store.Store[*Resource[Spec, Status]], obj store.Object[*Resource[Spec, Status]], name string) error {
	cur := obj
	for range store.DefaultAttempts {
		next := cur.Value.clone()
		next.Finalizers = slices.DeleteFunc(next.Finalizers, func(f string) bool { return f == name })
		_, err := s.Update(ctx, cur.Key, next, cur.Revision)
		switch {
		case err == nil, errors.Is(err, store.ErrNotFound):
			return nil
		case !errors.Is(err, store.ErrConflict):
			return err
		}
		cur, err = s.Get(ctx, obj.Key)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return nil
		case err != nil:
			return err
		case cur.CreateRevision != obj.CreateRevision || cur.Value == nil || !cur.Value.HasFinalizer(name):
			return nil // another object now, or the finalizer is gone: nothing of ours left
		}
	}
	return fmt.Errorf("%w: Finalize: %q kept changing while its finalizer %q was removed", store.ErrConflict, obj.Key, name)
}
