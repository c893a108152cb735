package controller

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"

	"github.com/converge-go/converge/examples/internal/pods"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/resource"
	"github.com/converge-go/converge/store"
)

// Reconciler converges the pods of each replica set toward its spec, then
// records what it observed with a compare-and-swap status write against the
// revision it reconciled. It keeps no state of its own: each reconcile looks
// at the running pods, so it is idempotent, and one that finds the right
// pods and an up-to-date status starts, stops and writes nothing.
//
// Every write goes through the request's store (Request.Store), that is
// through the controller: under leader election it carries the current
// term's guard, so a deposed leader's status write is rejected with
// store.ErrGuardFailed; its echo does not wake the key again; and the next
// reconcile of the key sees the object it wrote, never an older one. The
// reconciler itself holds no store and attaches no guard.
type Reconciler struct {
	Pods Pods
	// StatusWritten, if set, is called after each status write that
	// changed the stored object, with the reconcile's context (which
	// carries the term of leadership, lock.FromContext, if any) and the
	// object written. It is for narration and tests.
	StatusWritten func(ctx context.Context, obj store.Object[*ReplicaSet])
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request[*ReplicaSet]) (reconcile.Result, error) {
	running := r.Pods.Running(req.Key)
	if req.Deleted {
		for _, pod := range running {
			if err := r.Pods.Stop(ctx, pod); err != nil {
				return reconcile.Result{}, fmt.Errorf("stop pod %d: %w", pod.PID, err)
			}
		}
		return reconcile.Result{}, nil
	}
	spec := req.Object.Value.Spec
	if err := validate(spec); err != nil {
		return reconcile.Result{}, reconcile.Terminal(err)
	}

	// Surplus pods go newest first: the oldest have proven themselves.
	for len(running) > spec.Replicas {
		pod := running[len(running)-1]
		if err := r.Pods.Stop(ctx, pod); err != nil {
			return reconcile.Result{}, fmt.Errorf("stop pod %d: %w", pod.PID, err)
		}
		running = running[:len(running)-1]
	}
	var startErr error
	for len(running) < spec.Replicas {
		pod, err := r.Pods.Start(ctx, req.Key, spec.Command)
		if err != nil {
			startErr = fmt.Errorf("start pod: %w", err)
			break
		}
		running = append(running, pod)
	}

	status, ready := observe(running, spec.Replicas, startErr)
	written, err := resource.WriteStatus(ctx, req.Store, req.Object, status, ready)
	if err == nil && written.Revision != req.Object.Revision && r.StatusWritten != nil {
		r.StatusWritten(ctx, written)
	}
	if startErr != nil {
		// Back off on the start failure whatever became of the status.
		return reconcile.Result{}, errors.Join(startErr, statusErr(err))
	}
	return reconcile.Result{}, err
}

// statusErr keeps a status write error for reporting without letting a
// conflict turn a start failure into an immediate retry.
func statusErr(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("status not written: %s", err)
}

// observe builds the status and the Ready condition from the pods running.
func observe(running []pods.Pod, want int, startErr error) (Status, resource.Condition) {
	pids := make([]int, len(running))
	for i, p := range running {
		pids[i] = p.PID
	}
	slices.Sort(pids)
	status := Status{ReadyReplicas: len(running), Pods: pids}
	msg := fmt.Sprintf("%d of %d pods running", len(running), want)
	switch {
	case startErr != nil:
		return status, resource.Condition{Type: ConditionReady, Status: resource.ConditionFalse, Reason: "StartFailed", Message: msg + ": " + startErr.Error()}
	case len(running) == want:
		return status, resource.Condition{Type: ConditionReady, Status: resource.ConditionTrue, Reason: "AllPodsRunning", Message: msg}
	}
	return status, resource.Condition{Type: ConditionReady, Status: resource.ConditionFalse, Reason: "Scaling", Message: msg}
}

// validate rejects a spec no retry can make work.
func validate(spec Spec) error {
	if spec.Replicas < 0 {
		return fmt.Errorf("replicas %d: must not be negative", spec.Replicas)
	}
	if len(spec.Command) > 0 {
		if _, err := exec.LookPath(spec.Command[0]); err != nil {
			return fmt.Errorf("command: %w", err)
		}
	}
	return nil
}
