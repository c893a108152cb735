package owners

import (
	"context"
	"fmt"
	"slices"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// release handles obj (metadata m) as an owner, from the children the
// graph has for its key (and, for an owner being deleted, those the cache
// holds: cachedChildren):
//
//   - a child that names another object under the key (an owner deleted
//     and created again) is woken, to be judged as the child of an owner
//     gone;
//   - marked with OrphanFinalizer, it wakes every child that still names
//     it (each drops the reference), and once none does, removes the
//     finalizer (and ForegroundFinalizer, which has nothing left to wait
//     for);
//   - marked with ForegroundFinalizer, it wakes every child not yet
//     marked (each is deleted, or drops the reference if another owner
//     keeps it), and once no child with Block names it, removes the
//     finalizer.
//
// Removing the last finalizer deletes the owner, in the same
// compare-and-swap; its children are then woken as an owner gone's.
func (c *Collector[T]) release(ctx context.Context, req reconcile.Request[T], obj store.Object[T], m apistore.Meta) error {
	orphan := m.Deleting() && m.HasFinalizer(apistore.OrphanFinalizer)
	fore := m.Deleting() && m.HasFinalizer(apistore.ForegroundFinalizer)
	if orphan || fore {
		c.cachedChildren(obj.Key)
	}
	waiting := 0
	for _, k := range c.graph.childrenOf(obj.Key) {
		switch {
		case k.key == obj.Key:
			// An object naming itself waits for nothing.
		case k.ref.UID != obj.CreateRevision:
			c.wake(k.key)
		case orphan:
			c.wake(k.key)
			waiting++
		case fore:
			if !k.marked {
				c.wake(k.key)
			}
			if k.ref.Block {
				waiting++
			}
		}
	}
	if !orphan && !fore || waiting > 0 {
		return nil
	}
	next := m
	next.Finalizers = slices.DeleteFunc(slices.Clone(m.Finalizers), func(f string) bool {
		return f == apistore.ForegroundFinalizer || orphan && f == apistore.OrphanFinalizer
	})
	return c.removeFinalizers(ctx, req, obj, next)
}

// removeFinalizers writes obj with the metadata next (fewer finalizers)
// against its revision; if that removed the last, the owner is gone.
func (c *Collector[T]) removeFinalizers(ctx context.Context, req reconcile.Request[T], obj store.Object[T], next apistore.Meta) error {
	v, err := c.kind.WithMeta(obj.Value, next)
	if err != nil {
		return reconcile.Terminal(fmt.Errorf("%w: owners: %q: %w", store.ErrInvalid, obj.Key, err))
	}
	var written store.Object[T]
	deleted := false
	if r, ok := req.Store.(apistore.Replacer[T]); ok {
		written, deleted, err = r.Replace(ctx, obj.Key, v, obj.Revision)
	} else {
		written, err = req.Store.Update(ctx, obj.Key, v, obj.Revision)
		deleted = err == nil && len(next.Finalizers) == 0
	}
	switch {
	case err != nil:
		return err
	case deleted:
		c.removed(obj.Key, written.Revision)
	default:
		c.graph.seen(obj.Key, written.Revision, next.Owners, true)
	}
	return nil
}

// ownersIndex names the index of the collector's cache by the keys of the
// owners each object names.
const ownersIndex = "owners"

// ownerKeys returns the keys of the owners obj names, for ownersIndex.
func (c *Collector[T]) ownerKeys(obj store.Object[T]) []string {
	m, err := c.kind.Meta(obj.Value)
	if err != nil {
		return nil
	}
	return ownerKeys(m.Owners, nil)
}

// cachedChildren hands the graph the children of owner that the cache
// holds. A child created or changed before its owner's deletion began is
// in the cache when the owner's mark is, but its own reconcile, which
// feeds the graph, may come after the owner's: the deletion must count it
// all the same. A child's object older than the graph's (the collector's
// own writes run ahead of the cache) changes nothing (graph.seen).
func (c *Collector[T]) cachedChildren(owner string) {
	for _, obj := range c.ctrl.Lister().ByIndex(ownersIndex, owner) {
		if m, err := c.kind.Meta(obj.Value); err == nil {
			c.graph.seen(obj.Key, obj.Revision, m.Owners, m.Deleting())
		}
	}
}
