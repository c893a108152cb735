package external

import (
	"context"
	"errors"
	"fmt"
)

// ErrNotAdopted matches the error of a resource whose status records a
// create, or names an object (Options.ExternalName unset), while the
// object found under that name is not one this operator made for the
// key: its mark names another operator, store or key, or it has none and
// Options.Creates does not hold the create. Status can be written by any
// holder of a store token: it never suffices to take an object.
var ErrNotAdopted = errors.New("external: the object found was not made by this operator")

// judge decides whether the existing object d names (obs), found while
// create id is recorded in status, is this operator's: its mark names
// this operator, this store and the key; or it is unmarked, named by
// Options.ExternalName (a name read from status never suffices), and
// Options.Creates holds create id of the key, and then judge returns d
// with the Mark to adopt it with (Update stores it). Otherwise it
// returns ErrNotAdopted: the object is neither updated nor deleted.
func (r *Reconciler[Spec, Status]) judge(ctx context.Context, id string, d Desired[Spec], obs Observation[Status]) (Desired[Spec], error) {
	mine, err := r.marker.Mark(ctx)
	if err != nil {
		return d, err
	}
	m, err := r.markOf(ctx, d.Name, obs)
	if err != nil {
		return d, err
	}
	switch {
	case m.of(mine, d.Key):
		return d, nil
	case m.IsZero() && r.opts.Creates != nil && r.chosen(d.Key, d.Spec) != "":
		held, err := r.opts.Creates.Holds(ctx, d.Key, id)
		if err != nil {
			return d, err
		}
		if held {
			d.Mark = Mark{Mark: mine, Key: d.Key, Create: id}
			return d, nil
		}
	}
	return d, fmt.Errorf("%w: %q: status records create %s, but the object %q was not made by it (its mark: %q): "+
		"it is neither adopted nor deleted; remove or rename it, or clear \"creating\" in the status record",
		ErrNotAdopted, d.Key, id, d.Name, markText(m))
}

// markOf returns the mark of the object named name: the one Observe read
// back, else the one List lists beside it (the zero Mark for none).
func (r *Reconciler[Spec, Status]) markOf(ctx context.Context, name string, obs Observation[Status]) (Mark, error) {
	if !obs.Mark.IsZero() || r.world.List == nil {
		return obs.Mark, nil
	}
	listed, err := r.world.List(ctx)
	if err != nil {
		return Mark{}, fromWorld("list", err)
	}
	for _, l := range listed {
		if l.Name == name {
			return l.Mark, nil
		}
	}
	return Mark{}, nil
}

func markText(m Mark) string {
	if m.IsZero() {
		return ""
	}
	return m.String()
}

// begin and end record a create in Options.Creates and forget it (no-ops
// without it).
func (r *Reconciler[Spec, Status]) begin(ctx context.Context, key, id string) error {
	if r.opts.Creates == nil {
		return nil
	}
	return r.opts.Creates.Begin(ctx, key, id)
}

func (r *Reconciler[Spec, Status]) end(ctx context.Context, key string) error {
	if r.opts.Creates == nil {
		return nil
	}
	return r.opts.Creates.End(ctx, key)
}
