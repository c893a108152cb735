package main

import (
	"context"
	"time"

	"github.com/converge-go/converge/internal/ctxtime"
	"github.com/converge-go/converge/reconcile"
)

// itemReconciler is the example's reconciler. It waits io on pretend I/O,
// then records the generation it saw as observed, by the replica id: a
// compare-and-swap write through the controller (Request.Store), which
// adds the guards of the key's bucket claim, so that a replica that has
// lost the bucket writes nothing.
//
// In the replica process it runs wrapped: recorded (record.go) notes
// every reconcile and accepted write in the shared file, and, for the
// measurements, churning (churn.go) makes every reconcile write and
// requeue.
type itemReconciler struct {
	id string
	io time.Duration
}

// Reconcile implements reconcile.Reconciler.
func (r itemReconciler) Reconcile(ctx context.Context, req reconcile.Request[*Item]) (reconcile.Result, error) {
	if req.Deleted || req.Object.Value == nil {
		return reconcile.Result{}, nil
	}
	if err := ctxtime.Sleep(ctx, r.io); err != nil {
		return reconcile.Result{}, err
	}
	item := *req.Object.Value
	if item.Observed == item.Generation {
		return reconcile.Result{}, nil
	}
	item.Observed, item.By = item.Generation, r.id
	_, err := req.Store.Update(ctx, req.Key, &item, req.Object.Revision)
	return reconcile.Result{}, err
}
