package controller

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"

	"github.com/converge-go/converge/examples/internal/pods"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
)

// Reconciler converges the pods of each replica set toward its spec, then
// records what it observed with a compare-and-swap status write against the
// revision it reconciled. It keeps no state of its own: each reconcile looks
// at the running pods, so it is idempotent, and one that finds the right
// pods and an up-to-date status starts, stops and writes nothing.
//
// Its first step is the finalizer (resource.Finalize with Finalizer): it
// puts Finalizer on a replica set before starting any pod for it, and once
// the replica set is marked for deletion it stops its pods, then removes
// the finalizer, which removes the replica set. Over a store with the
// API-server layer (apistore.New(s, resource.Kind[Spec, Status]{})), a
// replica set deleted while no controller runs therefore stays, marked,
// until a controller starts and stops its pods. Over a store without it, a
// deletion is immediate, and the pods go when the controller sees it
// (Request.Deleted), if it does.
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
	if req.Deleted {
		// Gone without its finalizer's cleanup: from a store without the
		// API-server layer, or with the finalizer removed by hand. Its
		// pods go all the same, if this controller still sees them.
		return reconcile.Result{}, r.stopAll(ctx, req.Key)
	}
	// The finalizer first: in place before any pod starts, so that a
	// deletion, even one made while no controller runs, waits for the
	// pods to be stopped.
	obj, deleting, err := resource.Finalize(ctx, req, Finalizer, func(ctx context.Context) error {
		return r.stopAll(ctx, req.Key)
	})
	if deleting || err != nil {
		return reconcile.Result{}, err
	}
	spec := obj.Value.Spec
	if err := validate(spec); err != nil {
		return reconcile.Result{}, reconcile.Terminal(err)
	}
	running := r.Pods.Running(req.Key)

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
	written, err := resource.WriteStatus(ctx, req.Store, obj, status, ready)
	if err == nil && written.Revision != obj.Revision && r.StatusWritten != nil {
		r.StatusWritten(ctx, written)
	}
	if startErr != nil {
		// Back off on the start failure whatever became of the status.
		return reconcile.Result{}, errors.Join(startErr, statusErr(err))
	}
	return reconcile.Result{}, err
}

// stopAll stops every pod of the replica set key: its finalizer's
// cleanup, which finds nothing to do once they are gone.
func (r *Reconciler) stopAll(ctx context.Context, key string) error {
	for _, pod := range r.Pods.Running(key) {
		if err := r.Pods.Stop(ctx, pod); err != nil {
			return fmt.Errorf("stop pod %d: %w", pod.PID, err)
		}
	}
	return nil
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

// validate rejects a spec no retry can make work: what Admission refuses
// where it is written (a spec may predate the rule), and a command whose
// program is not on this host.
func validate(spec Spec) error {
	if err := checkSpec(spec); err != nil {
		return err
	}
	if len(spec.Command) > 0 {
		if _, err := exec.LookPath(spec.Command[0]); err != nil {
			return fmt.Errorf("command: %w", err)
		}
	}
	return nil
}
