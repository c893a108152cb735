package external

import (
	"context"

	"github.com/converge-go/converge/store"
)

// cleanup is the finalizer's step for obj, marked for deletion: under
// Retain it unmarks the object and forgets it; under Delete it deletes
// the object named in status, chosen, or looked up (a create cut short),
// and asks a person (ErrCreateUnknown) only for a create cut short that
// nothing can look up.
func (r *Reconciler[Spec, Status]) cleanup(ctx context.Context, obj store.Object[*res[Spec, Status]]) error {
	d, err := r.desired(ctx, obj)
	if err != nil {
		return err
	}
	if r.opts.Reclaim != nil && r.opts.Reclaim(obj.Value.Spec) == Retain {
		if d.Name == "" || r.world.Unmark == nil {
			return nil
		}
		return fromWorld("unmark", r.world.Unmark(ctx, d))
	}
	if d.Name == "" {
		return nil // nothing was made: no create is recorded, none is found
	}
	return fromWorld("delete", r.world.Delete(ctx, d))
}
