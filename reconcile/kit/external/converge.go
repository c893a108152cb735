package external

import (
	"context"
	"errors"
	"fmt"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/dependency"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
)

// res is the stored type of a kind the kit reconciles.
type res[Spec, Status any] = resource.Resource[Spec, Status]

// Reconcile converges the external object of req's resource: the
// finalizer first, then the external name (recorded, chosen, or looked
// up after a create cut short), then Observe and, as it found, Create or
// Update, then status (Record, conditions, observed generation), all
// written through req.Store. See the package documentation for the
// guarantees.
func (r *Reconciler[Spec, Status]) Reconcile(ctx context.Context, req reconcile.Request[*res[Spec, Status]]) (reconcile.Result, error) {
	if req.Deleted {
		r.gone(req.Key)
		return reconcile.Result{}, nil
	}
	obj, deleting, err := resource.Finalize(ctx, req, r.opts.Finalizer, func(ctx context.Context) error {
		return r.cleanup(ctx, req.Object)
	})
	if deleting {
		if err != nil {
			return reconcile.Result{}, r.fail(ctx, req.Store, req.Object, err, ReasonDeleting)
		}
		r.gone(req.Key)
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if r.opts.Validate != nil {
		if err := r.opts.Validate(ctx, obj.Key, obj.Value.Spec); err != nil {
			if !errors.Is(err, dependency.ErrDown) {
				err = Reject(err)
			}
			return reconcile.Result{}, r.fail(ctx, req.Store, obj, fromWorld("validate", err), "")
		}
	}
	t := &turn[Spec, Status]{r: r, s: req.Store, obj: obj}
	return t.converge(ctx)
}

// turn is one reconcile of a resource not being deleted: the object as
// last written, and the store to write through.
type turn[Spec, Status any] struct {
	r   *Reconciler[Spec, Status]
	s   store.Store[*res[Spec, Status]]
	obj store.Object[*res[Spec, Status]]
}

// converge observes the external object and creates or updates it as
// needed, then records what it observed.
func (t *turn[Spec, Status]) converge(ctx context.Context) (reconcile.Result, error) {
	d, err := t.r.desired(ctx, t.obj)
	if err != nil {
		return reconcile.Result{}, t.r.fail(ctx, t.s, t.obj, err, "")
	}
	d, obs, err := t.r.claim(ctx, t.obj, d)
	if err != nil {
		return reconcile.Result{}, t.r.fail(ctx, t.s, t.obj, err, "")
	}
	if !d.Mark.IsZero() {
		obs.State = Differs // adopted: Update stores its mark
	}
	changed := ""
	switch obs.State {
	case Absent:
		if d, err = t.create(ctx, d); err != nil {
			return reconcile.Result{}, t.r.fail(ctx, t.s, t.obj, err, ReasonCreating)
		}
		changed = ReasonCreating
	case Differs:
		if err = fromWorld("update", t.r.world.Update(ctx, d, obs)); err != nil {
			return reconcile.Result{}, t.r.fail(ctx, t.s, t.obj, err, "")
		}
		changed = ReasonUpdating
	}
	if changed != "" {
		if obs, err = t.r.observe(ctx, d); err != nil {
			return reconcile.Result{}, t.r.fail(ctx, t.s, t.obj, err, changed)
		}
	}
	return t.succeed(ctx, d, obs, changed)
}

// succeed records what the reconcile observed: the status, the Record,
// Synced True and Ready as the observation says.
func (t *turn[Spec, Status]) succeed(ctx context.Context, d Desired[Spec], obs Observation[Status], changed string) (reconcile.Result, error) {
	ready := resource.Condition{Type: ConditionReady, Status: resource.ConditionTrue, Reason: ReasonAvailable}
	switch {
	case obs.State != UpToDate:
		ready = resource.Condition{Type: ConditionReady, Status: resource.ConditionFalse, Reason: changed,
			Message: fmt.Sprintf("%s made; the world shows it %v", changed, obs.State)}
	case obs.NotReady != "":
		ready = resource.Condition{Type: ConditionReady, Status: resource.ConditionFalse, Reason: obs.NotReady}
	}
	synced := resource.Condition{Type: ConditionSynced, Status: resource.ConditionTrue, Reason: ReasonSynced}
	st := obs.Status
	*t.r.opts.Record(&st) = Record{Name: d.Name, Fingerprint: obs.Fingerprint}
	if _, err := resource.WriteStatus(ctx, t.s, t.obj, st, ready, synced); err != nil {
		return reconcile.Result{}, err
	}
	if changed == ReasonCreating || t.r.record(t.obj.Value).Creating != "" {
		if err := t.r.end(ctx, d.Key); err != nil { // the create is judged
			return reconcile.Result{}, err
		}
	}
	t.r.saw(d, obs)
	if ready.Status != resource.ConditionTrue || t.r.drift == nil {
		return reconcile.Result{RequeueAfter: t.r.opts.Poll}, nil
	}
	return reconcile.Result{}, nil
}

// observe asks the world about d, checking its answer.
func (r *Reconciler[Spec, Status]) observe(ctx context.Context, d Desired[Spec]) (Observation[Status], error) {
	obs, err := r.world.Observe(ctx, d)
	if err != nil {
		return obs, fromWorld("observe", err)
	}
	if obs.State != Absent && obs.State != UpToDate && obs.State != Differs {
		return obs, fromWorld("observe", fmt.Errorf("%w: %q: unknown state %d", ErrInvalid, d.Key, obs.State))
	}
	return obs, nil
}

// record returns the kit's Record in v's status.
func (r *Reconciler[Spec, Status]) record(v *res[Spec, Status]) Record {
	st := v.Status
	return *r.opts.Record(&st)
}
