package owners

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// standing is what a child's reference says of its owner now.
type standing uint8

const (
	// present: the owner is there (marked included, if its deletion does
	// nothing to its children: Background, or done with them; it counts
	// until it is gone), or outside the view, where the collector cannot
	// tell.
	present standing = iota
	// absent: no object with the reference's UID is cached under its key
	// (none, or one created anew). A live read confirms it before any
	// deletion.
	absent
	// waitedFor: the owner is being deleted in the foreground (its
	// course is foreground): the child goes first, unless an owner present
	// keeps it.
	waitedFor
	// orphaned: the owner is being deleted with Orphan (its course is
	// orphaning): the child drops the reference and stays, as far as this
	// owner is concerned.
	orphaned
)

// judgeChild applies to the child obj (metadata m) what its owners say,
// as Kubernetes' collector does (attemptToDeleteItem):
//
//   - references to owners orphaning it are removed, and so are those to
//     owners deleted in the foreground if an owner present keeps it (so
//     that they do not wait for it);
//   - if no owner present is left and some reference is left, it is
//     deleted, once a live read has confirmed that every absent owner is
//     gone: in the foreground if an owner waits for it and it has
//     children of its own (so that they go first), else with no
//     propagation given (its own garbage-collector finalizer decides;
//     see apistore.Meta.MarkedWith). Before a deletion in the foreground,
//     if one of its children is itself being deleted in the foreground,
//     its references are made non-blocking (breakCycle).
//
// It returns the child as left by its writes, and whether it was deleted
// or marked for deletion.
func (c *Collector[T]) judgeChild(ctx context.Context, req reconcile.Request[T], obj store.Object[T], m apistore.Meta) (store.Object[T], apistore.Meta, bool, error) {
	if len(m.Owners) == 0 {
		return obj, m, false, nil
	}
	stand := make([]standing, len(m.Owners))
	anyPresent := false
	for i, ref := range m.Owners {
		stand[i] = c.standingOf(ref)
		anyPresent = anyPresent || stand[i] == present
	}
	var keep []apistore.Owner
	var kept []standing
	for i, ref := range m.Owners {
		if stand[i] == orphaned || anyPresent && stand[i] == waitedFor {
			continue
		}
		keep, kept = append(keep, ref), append(kept, stand[i])
	}
	var err error
	if len(keep) != len(m.Owners) {
		if obj, m, err = c.setOwners(ctx, req, obj, m, keep); err != nil {
			return obj, m, false, err
		}
	}
	if anyPresent || len(keep) == 0 || m.Deleting() {
		return obj, m, false, nil
	}
	if err := c.confirmGone(ctx, req.Store, obj.Key, keep, kept); err != nil {
		return obj, m, false, err
	}
	var p apistore.Propagation
	if slices.Contains(kept, waitedFor) {
		if obj, m, p, err = c.breakCycle(ctx, req, obj, m); err != nil {
			return obj, m, false, err
		}
	}
	return obj, m, true, c.deleteChild(ctx, req, obj, m, p)
}

// standingOf reads from the cache what ref says of its owner. An owner
// the collector has seen removed is absent, though the cache may not hold
// its removal yet.
func (c *Collector[T]) standingOf(ref apistore.Owner) standing {
	if !c.inView(ref.Key) {
		return present
	}
	owner, ok := c.ctrl.Lister().Get(ref.Key)
	if !ok || owner.CreateRevision != ref.UID || c.graph.removedSince(ref.Key, owner.Revision) {
		return absent
	}
	om, err := c.kind.Meta(owner.Value)
	if err != nil {
		return present
	}
	switch courseOf(om) {
	case orphaning:
		return orphaned
	case foreground:
		return waitedFor
	}
	return present
}

// confirmGone reads every owner the cache has as absent from the store
// itself, and returns nil if each is gone (not found, or another object
// under its key). An owner that cannot be read (the store unreachable) is
// not gone, and neither is one the store still has with the reference's
// UID (the cache is behind): both are errors, and the child is judged
// again after a backoff.
func (c *Collector[T]) confirmGone(ctx context.Context, s store.Store[T], child string, refs []apistore.Owner, stand []standing) error {
	for i, ref := range refs {
		if stand[i] != absent {
			continue
		}
		owner, err := s.Get(ctx, ref.Key)
		switch {
		case errors.Is(err, store.ErrNotFound):
			continue
		case err != nil:
			return fmt.Errorf("owners: reading %q, owner of %q: %w", ref.Key, child, err)
		case owner.CreateRevision == ref.UID:
			// Whatever removal of it the collector recorded is not this
			// store's (one replaced since): the cache is to be trusted.
			c.graph.forgetRemoval(ref.Key)
			return fmt.Errorf("owners: %q, owner of %q, is in the store and not yet in the cache", ref.Key, child)
		}
	}
	return nil
}

// setOwners writes obj with owners as its references, against its
// revision, and records the result in the graph.
func (c *Collector[T]) setOwners(ctx context.Context, req reconcile.Request[T], obj store.Object[T], m apistore.Meta, owners []apistore.Owner) (store.Object[T], apistore.Meta, error) {
	next := m
	next.Owners = owners
	v, err := c.kind.WithMeta(obj.Value, next)
	if err != nil {
		return obj, m, reconcile.Terminal(fmt.Errorf("%w: owners: %q: %w", store.ErrInvalid, obj.Key, err))
	}
	written, err := req.Store.Update(ctx, obj.Key, v, obj.Revision)
	if err != nil {
		return obj, m, err
	}
	wm, err := c.kind.Meta(written.Value)
	if err != nil {
		return obj, m, reconcile.Terminal(fmt.Errorf("%w: owners: the metadata written to %q: %w", store.ErrInvalid, obj.Key, err))
	}
	c.wakeDeleting(c.graph.seen(obj.Key, written.Revision, wm.Owners, markOf(wm)))
	return written, wm, nil
}

// deleteChild deletes obj with propagation p through the layer, against
// its revision: an object with finalizers (the foreground one included)
// is only marked, and its mark's change brings it back here as an owner.
// The graph records the mark the layer makes (apistore.Meta.MarkedWith).
func (c *Collector[T]) deleteChild(ctx context.Context, req reconcile.Request[T], obj store.Object[T], m apistore.Meta, p apistore.Propagation) error {
	d, ok := req.Store.(apistore.PropagatingDeleter)
	if !ok {
		return reconcile.Terminal(fmt.Errorf("%w: owners: the controller's writer %T has no DeleteWith", store.ErrInvalid, req.Store))
	}
	rev, isMarked, err := d.DeleteWith(ctx, obj.Key, obj.Revision, p)
	switch {
	case err != nil:
		return err
	case isMarked:
		next := m
		prop, finalizers, err := m.MarkedWith(p)
		if err != nil {
			return reconcile.Terminal(err)
		}
		next.Finalizers, next.Deletion = finalizers, &apistore.Deletion{Propagation: prop}
		c.graph.seen(obj.Key, rev, m.Owners, markOf(next))
	default:
		c.removed(obj.Key, rev)
	}
	return nil
}
