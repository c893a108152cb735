package external

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/converge-go/converge/reconcile/kit/drift"
	"github.com/converge-go/converge/reconcile/kit/prune"
	"github.com/converge-go/converge/store"
)

// driftList is the drift source's listing: each object under the key
// whose reconcile last left it in the world (managed), marked or not,
// and each object this operator marked from this store under its mark's
// key, with its fingerprint. So an object the kit manages without its
// mark (one that existed before the operator, or whose mark a person
// removed) is polled as the others are, and not found vanished at every
// poll.
func (r *Reconciler[Spec, Status]) driftList(ctx context.Context) ([]drift.Observed, error) {
	listed, err := r.world.List(ctx)
	if err != nil {
		return nil, err
	}
	m, err := r.marker.Mark(ctx)
	if err != nil {
		return nil, err
	}
	byName := r.managed.byName()
	var out []drift.Observed
	for _, l := range listed {
		keys := byName[l.Name]
		if r.marked(l, m) && !slices.Contains(keys, l.Mark.Key) {
			keys = append(keys, l.Mark.Key)
		}
		for _, key := range keys {
			out = append(out, drift.Observed{Key: key, Fingerprint: l.Fingerprint})
		}
	}
	return out, nil
}

// marked reports whether l carries the mark m of this operator and store
// for a valid key under Options.Prefix.
func (r *Reconciler[Spec, Status]) marked(l Listed, m prune.Mark) bool {
	return l.Mark.Mark == m && strings.HasPrefix(l.Mark.Key, r.opts.Prefix) && store.ValidateKey(l.Mark.Key) == nil
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
