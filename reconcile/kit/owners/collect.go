package owners

import (
	"context"
	"errors"
	"fmt"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/store"
)

// reconcile handles one key: first as a child (child.go: is it to be
// deleted, or to drop a reference?), then, if it is still there, as an
// owner (owner.go: what does its deletion wait for?). A key the store no
// longer holds is an owner gone: its children are looked at again.
//
// It acts only on a whole view: it waits for the cache to hold the
// store's list, and fails (to be retried with backoff) while the store is
// reported degraded, so that nothing is judged gone because it could not
// be seen.
func (c *Collector[T]) reconcile(ctx context.Context, req reconcile.Request[T]) (reconcile.Result, error) {
	if err := c.ctrl.WaitForSync(ctx); err != nil {
		return reconcile.Result{}, err
	}
	if err := c.ctrl.Ready(); err != nil {
		return reconcile.Result{}, fmt.Errorf("owners: %q waits for the store: %w", req.Key, err)
	}
	c.graph.build(c.listed)
	if req.Deleted {
		c.removed(req.Key, req.Object.Revision)
		return reconcile.Result{}, nil
	}
	obj := req.Object
	m, err := c.kind.Meta(obj.Value)
	if err != nil {
		return reconcile.Result{}, reconcile.Terminal(fmt.Errorf("%w: owners: the metadata of %q: %w", store.ErrInvalid, req.Key, err))
	}
	c.wakeDeleting(c.graph.seen(req.Key, obj.Revision, m.Owners, markOf(m)))
	obj, m, gone, err := c.judgeChild(ctx, req, obj, m)
	if err == nil && !gone {
		err = c.release(ctx, req, obj, m)
	}
	if errors.Is(err, store.ErrNotFound) {
		// The key went meanwhile: its deletion is a change of its own, to
		// be handled when it arrives.
		err = nil
	}
	return reconcile.Result{}, err
}

// listed returns the cache's keys that name owners, for graph.build.
func (c *Collector[T]) listed() []entry {
	var out []entry
	for _, obj := range c.ctrl.Lister().List() {
		m, err := c.kind.Meta(obj.Value)
		if err != nil || len(m.Owners) == 0 {
			continue
		}
		out = append(out, entry{key: obj.Key, rev: obj.Revision, refs: m.Owners, mark: markOf(m)})
	}
	return out
}

// removed records that key is gone at revision rev: the owners it named
// that are being deleted may have nothing left to wait for, and the
// children that name it have an owner gone, which they see gone though the
// cache may still hold it (graph.removedSince).
func (c *Collector[T]) removed(key string, rev int64) {
	c.wakeDeleting(c.graph.gone(key, rev))
	for _, k := range c.graph.childrenOf(key) {
		if k.key != key {
			c.wake(k.key)
		}
	}
}

// cachedRevision returns the revision of the object the cache holds under
// key, and whether it holds one.
func (c *Collector[T]) cachedRevision(key string) (int64, bool) {
	obj, ok := c.ctrl.Lister().Get(key)
	return obj.Revision, ok
}

// wakeDeleting wakes the owners among keys that are marked for deletion:
// the change of one of their children may be what their deletion waits
// for. The others have nothing to do when a child changes.
func (c *Collector[T]) wakeDeleting(keys []string) {
	for _, key := range keys {
		if !c.inView(key) {
			continue
		}
		obj, ok := c.ctrl.Lister().Get(key)
		if !ok {
			continue
		}
		if m, err := c.kind.Meta(obj.Value); err == nil && m.Deleting() {
			c.wake(key)
		}
	}
}
