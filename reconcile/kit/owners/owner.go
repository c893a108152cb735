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
// graph has for its key (and, for an owner whose deletion acts on its
// children, those the cache holds: cachedChildren). It follows the course
// of the deletion, which the propagation its mark records decides
// (courseOf):
//
//   - a child that names another object under the key (an owner deleted
//     and created again) is woken, to be judged as the child of an owner
//     gone;
//   - orphaning, it wakes every child that still names it (each drops the
//     reference), and once none does, removes OrphanFinalizer;
//   - foreground, it wakes every child not yet marked (each is deleted,
//     or drops the reference if another owner keeps it), and once no child
//     with Block names it, removes ForegroundFinalizer, as Kubernetes'
//     collector does with a "deleting dependents" owner;
//   - marked, it removes the garbage-collector finalizers its mark's
//     propagation does not hold it with (stray).
//
// Removing the last finalizer deletes the owner, in the same
// compare-and-swap; its children are then woken as an owner gone's.
func (c *Collector[T]) release(ctx context.Context, req reconcile.Request[T], obj store.Object[T], m apistore.Meta) error {
	crs := courseOf(m)
	if crs != none {
		c.cachedChildren(obj.Key)
	}
	left := 0
	for _, k := range c.graph.childrenOf(obj.Key) {
		switch {
		case k.key == obj.Key:
			// An object naming itself waits for nothing.
		case k.ref.UID != obj.CreateRevision:
			c.wake(k.key)
		case crs == orphaning:
			c.wake(k.key)
			left++
		case crs == foreground:
			if k.mark == unmarked {
				c.wake(k.key)
			}
			if k.ref.Block {
				left++
			}
		}
	}
	if !m.Deleting() {
		return nil
	}
	done := crs != none && left == 0
	next := m
	next.Finalizers = slices.DeleteFunc(slices.Clone(m.Finalizers), func(f string) bool {
		return stray(m, f) || done && (f == apistore.ForegroundFinalizer || f == apistore.OrphanFinalizer)
	})
	if len(next.Finalizers) == len(m.Finalizers) {
		return nil
	}
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
		c.graph.seen(obj.Key, written.Revision, next.Owners, markOf(next))
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
// holds, so that the graph's picture of them is the newer of the two. A
// child created or changed before its owner's deletion began is
// in the cache when the owner's mark is, but its own reconcile, which
// feeds the graph, may come after the owner's: the deletion must count it
// all the same. A child's object older than the graph's (the collector's
// own writes run ahead of the cache) changes nothing (graph.seen).
func (c *Collector[T]) cachedChildren(owner string) {
	for _, obj := range c.ctrl.Lister().ByIndex(ownersIndex, owner) {
		if m, err := c.kind.Meta(obj.Value); err == nil {
			c.graph.seen(obj.Key, obj.Revision, m.Owners, markOf(m))
		}
	}
}
