package main

import (
	"context"
	"errors"
	"time"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/store"
)

// churnRequeue is how soon a churning reconcile asks for its key again.
const churnRequeue = time.Millisecond

// churning is the load of the measurements and exclusivity runs: it makes
// every reconcile of next write and requeue its key, so that a converged
// world keeps its replicas busy. It shows next its item as not yet
// observed and counts the write in Item.Writes; with noWrites, it shows
// the item as observed, so that next only waits its I/O. Either way it
// asks for the key again after churnRequeue, unless the reconcile was
// cut short by its context.
type churning struct {
	next     reconcile.Reconciler[*Item]
	noWrites bool
}

// Reconcile implements reconcile.Reconciler.
func (c churning) Reconcile(ctx context.Context, req reconcile.Request[*Item]) (reconcile.Result, error) {
	if req.Deleted || req.Object.Value == nil {
		return c.next.Reconcile(ctx, req)
	}
	item := *req.Object.Value
	if c.noWrites {
		item.Observed = item.Generation
	} else {
		item.Observed = item.Generation - 1
		req.Store = countedWrites{req.Store}
	}
	req.Object.Value = &item
	res, err := c.next.Reconcile(ctx, req)
	if err == nil || ctx.Err() == nil || !errors.Is(err, ctx.Err()) {
		res.RequeueAfter = churnRequeue
	}
	return res, err
}

// countedWrites counts each Update in the written item's Writes.
type countedWrites struct{ store.Store[*Item] }

func (s countedWrites) Update(ctx context.Context, key string, v *Item, rev int64, guards ...store.Guard) (store.Object[*Item], error) {
	if v != nil {
		w := *v
		w.Writes++
		v = &w
	}
	return s.Store.Update(ctx, key, v, rev, guards...)
}
