package externaltest

import (
	"context"
	"errors"
	"fmt"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
)

// Request returns the request a controller would hand a reconcile of key
// in s now: the object, Deleting if it is marked, Deleted if it is gone,
// and s to write through.
func Request[Spec, Status any](ctx context.Context, s store.Store[*resource.Resource[Spec, Status]], key string) (reconcile.Request[*resource.Resource[Spec, Status]], error) {
	req := reconcile.Request[*resource.Resource[Spec, Status]]{Key: key, Store: s}
	obj, err := s.Get(ctx, key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		req.Deleted = true
		return req, nil
	case err != nil:
		return req, err
	}
	req.Object, req.Deleting = obj, obj.Value.Deleting()
	return req, nil
}

// Settle reconciles key with rec, as a controller would, until a
// reconcile ends without error and writes nothing to s, at most max
// times. It returns the last reconcile's error if it never settles (a
// terminal error, or a crash of Faults, ends it at once), nil once it
// has.
func Settle[Spec, Status any](ctx context.Context, rec reconcile.Reconciler[*resource.Resource[Spec, Status]], s store.Store[*resource.Resource[Spec, Status]], key string, max int) error {
	var last error
	for range max {
		before, err := s.Revision(ctx)
		if err != nil {
			return err
		}
		req, err := Request(ctx, s, key)
		if err != nil {
			return err
		}
		_, last = rec.Reconcile(ctx, req)
		after, err := s.Revision(ctx)
		if err != nil {
			return err
		}
		switch {
		case errors.Is(last, reconcile.ErrTerminal), errors.Is(last, ErrCrash):
			return last // not retried; or the process died
		case last == nil && after == before:
			return nil
		}
	}
	return fmt.Errorf("externaltest: %q did not settle in %d reconciles: %w", key, max, last)
}
