package external

import (
	"context"
	"errors"

	"github.com/converge-go/converge/store"
)

// cleanup is the finalizer's step for obj, marked for deletion: under
// Retain it unmarks the object and forgets it; under Delete it deletes
// the object named in status, chosen, or looked up (a create cut short),
// and asks a person (ErrCreateUnknown) only for a create cut short that
// nothing can look up. An object found while status records a create,
// or named by status, is unmarked or deleted only if it is this
// operator's (claim): any other is left as it is, and the resource goes.
func (r *Reconciler[Spec, Status]) cleanup(ctx context.Context, obj store.Object[*res[Spec, Status]]) error {
	d, err := r.desired(ctx, obj)
	if err != nil {
		return err
	}
	if d.Name != "" && (r.record(obj.Value).Creating != "" || r.chosen(d.Key, d.Spec) == "") {
		var obs Observation[Status]
		d, obs, err = r.claim(ctx, obj, d)
		var we *worldError
		if errors.As(err, &we) && we.op == "observe" && r.classify(err) == Rejected {
			d, obs, err = r.claimListed(ctx, d) // the world will not observe this spec
		}
		if errors.Is(err, ErrNotAdopted) {
			r.opts.Logger.WarnContext(ctx, "external: not deleting an object this operator did not make", "key", obj.Key, "err", err)
			return r.end(ctx, obj.Key)
		}
		if err != nil {
			return err
		}
		if obs.State == Absent {
			return r.end(ctx, obj.Key)
		}
	}
	if err := r.reclaim(ctx, obj.Value.Spec, d); err != nil {
		return err
	}
	return r.end(ctx, obj.Key)
}

// reclaim unmarks or deletes d's object as the reclaim policy of spec
// says.
func (r *Reconciler[Spec, Status]) reclaim(ctx context.Context, spec Spec, d Desired[Spec]) error {
	if r.opts.Reclaim != nil && r.opts.Reclaim(spec) == Retain {
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
