package external

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/converge-go/converge/reconcile/kit/intent"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
)

// desired returns what the world is asked about for obj: its name is
// Options.ExternalName's (a name recorded in status is never used then),
// else the one recorded, else the one a lookup finds (an object this
// operator marked for the key: a create cut short), else "". A recorded
// name is not trusted: vouch checks the object it names before anything
// touches it. A create cut short where nothing can look it up is
// ErrCreateUnknown.
func (r *Reconciler[Spec, Status]) desired(ctx context.Context, obj store.Object[*res[Spec, Status]]) (Desired[Spec], error) {
	rec := r.record(obj.Value)
	d := Desired[Spec]{Key: obj.Key, Spec: obj.Value.Spec, Name: r.chosen(obj.Key, obj.Value.Spec)}
	if d.Name == "" {
		d.Name = rec.Name
	}
	if d.Name != "" {
		return d, nil
	}
	if r.world.List == nil {
		if rec.Creating != "" {
			return d, r.unknown(obj.Key, rec.Creating)
		}
		return d, nil
	}
	found, err := r.lookup(ctx, obj.Key, rec.Creating)
	if err != nil {
		return d, err
	}
	if found != nil {
		d.Name = found.Name // adopted: recorded with the status
	}
	return d, nil
}

// chosen returns the name Options.ExternalName gives key's object, ""
// without it.
func (r *Reconciler[Spec, Status]) chosen(key string, spec Spec) string {
	if r.opts.ExternalName == nil {
		return ""
	}
	return r.opts.ExternalName(key, spec)
}

// unknown is the error of a create cut short that nothing can look up.
func (r *Reconciler[Spec, Status]) unknown(key, id string) error {
	return fmt.Errorf("%w: %q: create %s may have made an object the world cannot look up: "+
		"find it (its mark holds create=%s), then write its name into the status record's \"name\" "+
		"(convergectl status), or clear \"creating\" if there is none", ErrCreateUnknown, key, id, id)
}

// lookup finds the object this operator marked, from this store, for
// key: the one of create id if any (id may be empty), else the first by
// name; nil if there is none.
func (r *Reconciler[Spec, Status]) lookup(ctx context.Context, key, id string) (*Listed, error) {
	listed, err := r.world.List(ctx)
	if err != nil {
		return nil, fromWorld("list", err)
	}
	mine, err := r.marker.Mark(ctx)
	if err != nil {
		return nil, err
	}
	var pick *Listed
	for i := range listed {
		l := &listed[i]
		if !l.Mark.of(mine, key) || l.Name == "" {
			continue
		}
		if id != "" && l.Mark.Create == id {
			return l, nil
		}
		if pick == nil || strings.Compare(l.Name, pick.Name) < 0 {
			pick = l
		}
	}
	return pick, nil
}

// create makes d's object, safe across a crash: the create's ID (and the
// name, if chosen) is recorded in status first, with a compare-and-swap;
// then in Options.Creates, if set; the object is made carrying it in its
// mark; then its name is recorded and the ID cleared (and forgotten by
// Creates once the reconcile has observed the object). A crash between the first write and the last
// leaves the ID recorded, and the next reconcile looks the object up by
// it (desired) before it creates anything. So does a create that failed,
// unless it was Rejected or NothingMade: only a refusal says that
// nothing was made.
func (t *turn[Spec, Status]) create(ctx context.Context, d Desired[Spec]) (Desired[Spec], error) {
	mark, err := t.r.marker.Mark(ctx)
	if err != nil {
		return d, err
	}
	rec := t.r.record(t.obj.Value)
	id := rec.Creating
	if id == "" {
		id = intent.ID(t.obj.Key, t.obj.CreateRevision, t.obj.Value.Generation, int(t.obj.Revision))
	}
	d.Name = t.r.chosen(d.Key, d.Spec) // never a name read from status
	d.Mark = Mark{Mark: mark, Key: t.obj.Key, Create: id}
	creating := resource.Condition{Type: ConditionReady, Status: resource.ConditionFalse, Reason: ReasonCreating}
	if err := t.writeRecord(ctx, Record{Name: d.Name, Creating: id}, creating); err != nil {
		return d, err
	}
	if err := t.r.begin(ctx, d.Key, id); err != nil {
		return d, err
	}
	name, err := t.r.world.Create(ctx, d)
	if err != nil {
		err = fromWorld("create", err)
		if t.r.classify(err) == Rejected || errors.Is(err, ErrNothingMade) {
			// Refused: nothing was made, and nothing is to look up.
			if werr := t.writeRecord(ctx, Record{Name: rec.Name}); werr != nil {
				return d, werr
			}
			return d, errors.Join(err, t.r.end(ctx, d.Key))
		}
		return d, err
	}
	if name != "" {
		d.Name = name
	}
	if d.Name == "" {
		return d, fromWorld("create", fmt.Errorf("%w: %q: Create returned no name", ErrInvalid, d.Key))
	}
	return d, t.writeRecord(ctx, Record{Name: d.Name}, creating)
}

// writeRecord writes rec into the status, the rest of it as it is, with
// conds, and takes the object written as the turn's.
func (t *turn[Spec, Status]) writeRecord(ctx context.Context, rec Record, conds ...resource.Condition) error {
	st := t.obj.Value.Status
	*t.r.opts.Record(&st) = rec
	written, err := resource.WriteStatus(ctx, t.s, t.obj, st, conds...)
	if err != nil {
		return err
	}
	t.obj = written
	return nil
}
