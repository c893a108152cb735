package main

import (
	"context"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
)

// This file holds how the reconcilers report: the Ready condition, and the
// per-object error kept in each kind's status.

// ready is the Ready condition of an object whose world is as its spec
// says.
func ready(message string) resource.Condition {
	return resource.Condition{Type: ConditionReady, Status: resource.ConditionTrue, Reason: "Converged", Message: message}
}

// notReady is the Ready condition of an object that is not converged, and
// why.
func notReady(reason, message string) resource.Condition {
	return resource.Condition{Type: ConditionReady, Status: resource.ConditionFalse, Reason: reason, Message: message}
}

// failed records err in obj's status (st, which carries it already) and
// returns it, for the controller to retry the key with backoff or, for a
// terminal error, to wait for a change. The status write is made at best:
// when it fails too (the store is away, or the object changed), the error
// the reconcile returns is still err, and the next reconcile writes again.
func failed[Spec, Status any](ctx context.Context, s store.Store[*resource.Resource[Spec, Status]],
	obj store.Object[*resource.Resource[Spec, Status]], st Status, reason string, err error,
) (reconcile.Result, error) {
	_, _ = resource.WriteStatus(ctx, s, obj, st, notReady(reason, err.Error()))
	return reconcile.Result{}, err
}

func (s BackupScheduleStatus) withError(err error) BackupScheduleStatus {
	s.Error = err.Error()
	return s
}

func (s BackupStatus) withError(err error) BackupStatus {
	s.Error = err.Error()
	return s
}
