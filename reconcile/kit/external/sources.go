package external

import (
	"context"
	"fmt"
	"strings"

	"github.com/converge-go/converge/reconcile/kit/drift"
	"github.com/converge-go/converge/reconcile/kit/prune"
	"github.com/converge-go/converge/store"
)

// mine lists the world's objects this operator marked from this store,
// for a valid key under Options.Prefix.
func (r *Reconciler[Spec, Status]) mine(ctx context.Context) ([]Listed, error) {
	listed, err := r.world.List(ctx)
	if err != nil {
		return nil, err
	}
	m, err := r.marker.Mark(ctx)
	if err != nil {
		return nil, err
	}
	out := listed[:0:0]
	for _, l := range listed {
		if l.Mark.Mark == m && strings.HasPrefix(l.Mark.Key, r.opts.Prefix) && store.ValidateKey(l.Mark.Key) == nil {
			out = append(out, l)
		}
	}
	return out, nil
}

// driftList is the drift source's listing: the objects this operator
// marked, each under its key, with its fingerprint.
func (r *Reconciler[Spec, Status]) driftList(ctx context.Context) ([]drift.Observed, error) {
	listed, err := r.mine(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]drift.Observed, len(listed))
	for i, l := range listed {
		out[i] = drift.Observed{Key: l.Mark.Key, Fingerprint: l.Fingerprint}
	}
	return out, nil
}

// Pruner returns the pruner of the world for the controller c running
// this Reconciler: it deletes objects this operator marked from this
// store whose key is no longer desired (see package prune for its
// gates). Run it beside c (it is a manager runnable). It needs
// World.List; without it, Pruner returns an error matching ErrInvalid.
func (r *Reconciler[Spec, Status]) Pruner(c prune.Controller) (*prune.Pruner[*res[Spec, Status]], error) {
	if r.world.List == nil {
		return nil, fmt.Errorf("%w: Pruner: the World has no List", ErrInvalid)
	}
	opts := r.opts.Prune
	opts.Marker = r.marker
	opts.World = func(ctx context.Context) ([]prune.WorldObject, error) {
		listed, err := r.world.List(ctx)
		if err != nil {
			return nil, err
		}
		out := make([]prune.WorldObject, len(listed))
		for i, l := range listed {
			out[i] = prune.WorldObject{Key: l.Mark.Key, Name: l.Name, Mark: l.Mark.Mark}
		}
		return out, nil
	}
	opts.Delete = func(ctx context.Context, obj prune.WorldObject) error {
		return r.world.Delete(ctx, Desired[Spec]{Key: obj.Key, Name: obj.Name})
	}
	return prune.New(c, r.s, opts)
}
