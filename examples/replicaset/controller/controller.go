// Package controller is the replica set controller of the replicaset
// example: the stored resource (Spec, Status, ReplicaSet), the Reconciler
// that converges a replica set's pods toward its spec, and New, which runs
// it as a converge controller. Read this file first; the demo around it
// (examples/replicaset) and the failover demo (examples/failover) only run
// it.
//
// It is a package of its own, below the replicaset example, because the
// failover example runs the same controller as three replicas under leader
// election, and a main package cannot be imported. The pods it starts and
// stops are real processes, run by examples/internal/pods.
package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"slices"
	"time"

	"github.com/converge-go/converge/examples/internal/pods"
	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/resource"
	"github.com/converge-go/converge/store"
)

// Spec is the desired state of a replica set: how many pods, running what.
type Spec struct {
	// Replicas is the number of pods to keep running.
	Replicas int `json:"replicas"`
	// Command is what each pod runs; empty runs a pod that blocks until it
	// is stopped.
	Command []string `json:"command,omitempty"`
}

// Status is what the controller last observed.
type Status struct {
	// ReadyReplicas is the number of pods running after the last reconcile.
	ReadyReplicas int `json:"readyReplicas"`
	// Pods lists their process ids, in ascending order. A replaced pod
	// changes the list, so a status written before a failure is visibly
	// stale until the controller writes it again.
	Pods []int `json:"pods,omitempty"`
}

// ReplicaSet is the stored resource: Spec written with resource.PutSpec,
// Status written by the controller with resource.WriteStatus.
type ReplicaSet = resource.Resource[Spec, Status]

// ConditionReady is the condition the controller records on every
// reconcile: True when as many pods run as the spec asks for.
const ConditionReady = "Ready"

// Pods is the part of the world the reconciler acts on. pods.Supervisor is the
// real one; tests use a fake.
type Pods interface {
	// Running returns owner's running pods, oldest first.
	Running(owner string) []pods.Pod
	// Start starts a pod for owner running command.
	Start(ctx context.Context, owner string, command []string) (pods.Pod, error)
	// Stop stops pod and returns once it has ended.
	Stop(ctx context.Context, pod pods.Pod) error
}

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

// Config holds what New needs besides the store.
type Config struct {
	// Pods is the world the controller acts on.
	Pods Pods
	// Exits delivers the key of a replica set whose pod ended by itself.
	Exits <-chan string
	// Logger receives the controller's logs.
	Logger *slog.Logger
	// Prefix limits the replica sets the controller watches to the keys
	// under it ("" for all), for a store that holds other records too.
	Prefix string
	// StatusWritten, if set, hears each status write (see Reconciler).
	StatusWritten func(ctx context.Context, obj store.Object[*ReplicaSet])
	// Metrics, if set, hears each reconcile's outcome (tests count them).
	Metrics reconcile.Metrics
	// QueueMetrics, if set, hears the workqueue's measurements.
	QueueMetrics queue.Metrics
}

// New returns the replica set controller over s, with timings
// short enough for a demo: retries back off from 50ms to 1s. Its status
// writes go to s through the controller (Request.Store): run it under a
// manager.Manager with a lock.Elector and each carries the guard of the
// term it runs in.
func New(s store.Store[*ReplicaSet], cfg Config) (*reconcile.Controller[*ReplicaSet], error) {
	return reconcile.New(s, &Reconciler{Pods: cfg.Pods, StatusWritten: cfg.StatusWritten}, reconcile.Options[*ReplicaSet]{
		Name:         "replicaset",
		RateLimiter:  queue.NewExponential[string](50*time.Millisecond, time.Second, 0.1),
		Timeout:      10 * time.Second,
		GracePeriod:  5 * time.Second,
		Logger:       cfg.Logger,
		Sources:      []reconcile.Source{reconcile.FromChannel(cfg.Exits)},
		Prefix:       cfg.Prefix,
		Metrics:      cfg.Metrics,
		QueueMetrics: cfg.QueueMetrics,
	})
}
