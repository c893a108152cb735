package owners

import (
	"context"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// breakCycle decides how the child obj (metadata m), which an owner being
// deleted in the foreground waits for and no owner present keeps, is to
// be deleted, as Kubernetes' collector does (attemptToDeleteItem):
//
//   - without children of its own, with no propagation given (""): its
//     own garbage-collector finalizer decides;
//   - with children, in the foreground, so that they go first; and if one
//     of them is itself being deleted in the foreground (it waits for its
//     blocking children), the child's references are first made
//     non-blocking, in a compare-and-swap of their own. Blocking
//     references that go round a cycle would otherwise hold every member's
//     foreground deletion for ever: the owner waits for the child, which
//     waits for its child, which waits for ... the owner. Like
//     Kubernetes', the test has false positives: a child of a chain whose
//     lower member was deleted in the foreground first stops blocking its
//     owner too, which may then go before it.
//
// It returns the child as its write left it, and the propagation.
func (c *Collector[T]) breakCycle(ctx context.Context, req reconcile.Request[T], obj store.Object[T], m apistore.Meta) (store.Object[T], apistore.Meta, apistore.Propagation, error) {
	c.cachedChildren(obj.Key)
	hasChildren, childWaits := false, false
	for _, k := range c.graph.childrenOf(obj.Key) {
		if k.key == obj.Key || k.ref.UID != obj.CreateRevision {
			continue
		}
		hasChildren = true
		childWaits = childWaits || k.mark == waiting
	}
	if !hasChildren {
		return obj, m, "", nil
	}
	if !childWaits || !blocks(m.Owners) {
		return obj, m, apistore.Foreground, nil
	}
	unblocked := make([]apistore.Owner, len(m.Owners))
	for i, r := range m.Owners {
		r.Block = false
		unblocked[i] = r
	}
	obj, m, err := c.setOwners(ctx, req, obj, m, unblocked)
	return obj, m, apistore.Foreground, err
}

// blocks reports whether any of refs blocks its owner's deletion.
func blocks(refs []apistore.Owner) bool {
	for _, r := range refs {
		if r.Block {
			return true
		}
	}
	return false
}
