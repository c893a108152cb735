package external

import (
	"context"
	"fmt"

	"github.com/converge-go/converge/store"
)

// claim observes d's object for obj, if d has a name, and checks that it
// may be touched: an object found while status records a create must be
// the operator's, or adopted (judge); one whose name was read from status
// (Options.ExternalName chooses none) must carry the operator's mark for
// the key (vouch). Status can be written by any holder of a store token:
// a name in it never leads the kit to another object. An observation of
// an object that d has no name for is Absent.
func (r *Reconciler[Spec, Status]) claim(ctx context.Context, obj store.Object[*res[Spec, Status]], d Desired[Spec]) (Desired[Spec], Observation[Status], error) {
	var obs Observation[Status]
	if d.Name == "" {
		return d, obs, nil
	}
	id := r.record(obj.Value).Creating
	if id == "" && r.chosen(d.Key, d.Spec) == "" {
		return r.observeRecorded(ctx, d)
	}
	obs, err := r.observe(ctx, d)
	if err != nil || id == "" || obs.State == Absent {
		return d, obs, err
	}
	d, err = r.judge(ctx, id, d, obs)
	return d, obs, err
}

// observeRecorded observes the object d names, a name read from status:
// one found must be the operator's (vouch); if none is found, the object
// this operator marked for the key, if List finds one under another name,
// is the one observed (a name in status may not be the object's).
func (r *Reconciler[Spec, Status]) observeRecorded(ctx context.Context, d Desired[Spec]) (Desired[Spec], Observation[Status], error) {
	obs, err := r.observe(ctx, d)
	if err != nil {
		return d, obs, err
	}
	if obs.State != Absent {
		return d, obs, r.vouch(ctx, d, obs)
	}
	if r.world.List == nil {
		return d, obs, nil
	}
	found, err := r.lookup(ctx, d.Key, "")
	if err != nil || found == nil || found.Name == d.Name {
		return d, obs, err
	}
	d.Name = found.Name
	obs, err = r.observe(ctx, d)
	return d, obs, err
}

// vouch returns nil if the existing object d names (obs) carries this
// operator's mark, from this store, for d.Key, and ErrNotAdopted
// otherwise: it is neither updated, nor unmarked, nor deleted. Where the
// World cannot tell whose an object is (no List, and Observe read no
// mark), the object is taken as named (see the package's Limits).
func (r *Reconciler[Spec, Status]) vouch(ctx context.Context, d Desired[Spec], obs Observation[Status]) error {
	mine, err := r.marker.Mark(ctx)
	if err != nil {
		return err
	}
	m, err := r.markOf(ctx, d.Name, obs)
	if err != nil {
		return err
	}
	if m.of(mine, d.Key) || (m.IsZero() && r.world.List == nil) {
		return nil
	}
	return fmt.Errorf("%w: %q: status names the object %q, but it was not made by this operator for the key (its mark: %q): "+
		"it is neither updated, nor unmarked, nor deleted; clear \"name\" in the status record",
		ErrNotAdopted, d.Key, d.Name, markText(m))
}

// claimListed judges the object d names by List alone, for a deletion
// whose Observe the world refuses (Rejected: a spec it will not look
// at): an object listed under the name with the operator's mark for the
// key is the operator's; one not listed is gone (an observation Absent);
// any other, or any object where nothing lists, is not the operator's
// (ErrNotAdopted): it is left as it is.
func (r *Reconciler[Spec, Status]) claimListed(ctx context.Context, d Desired[Spec]) (Desired[Spec], Observation[Status], error) {
	var obs Observation[Status]
	if r.world.List == nil {
		return d, obs, fmt.Errorf("%w: %q: the world refuses to observe the object %q, and nothing lists it: it is not deleted",
			ErrNotAdopted, d.Key, d.Name)
	}
	mine, err := r.marker.Mark(ctx)
	if err != nil {
		return d, obs, err
	}
	listed, err := r.world.List(ctx)
	if err != nil {
		return d, obs, fromWorld("list", err)
	}
	for _, l := range listed {
		if l.Name != d.Name {
			continue
		}
		if l.Mark.of(mine, d.Key) {
			obs.State = UpToDate
			return d, obs, nil
		}
		return d, obs, fmt.Errorf("%w: %q: the world refuses to observe the object %q, and its mark (%q) is not this operator's for the key: it is not deleted",
			ErrNotAdopted, d.Key, d.Name, markText(l.Mark))
	}
	return d, obs, nil
}
