// Package controller is the replica set controller of the replicaset
// example: the Reconciler that converges a replica set's pods toward its
// spec (reconciler.go, the file to read first), the stored resource (Spec,
// Status, ReplicaSet, Finalizer) and New, which runs it as a converge
// controller (controller.go). The demo around it (examples/replicaset) and
// the failover demo (examples/failover) only run it.
//
// Give it a store wrapped with the API-server layer and the kind's rule,
// apistore.New(s, resource.Kind[Spec, Status]{},
// apistore.WithAdmission(prefix, Admission())), as the replicaset demo
// does: a spec no reconcile can make work is refused where it is written,
// and the reconciler's finalizer makes a deletion wait until the pods are
// stopped, even one made while no controller runs. Over a store
// without the layer it works as well, but a deletion it does not see (made
// while it was down) leaves the pods running.
//
// It is a package of its own, below the replicaset example, because the
// failover example runs the same controller as three replicas under leader
// election, and a main package cannot be imported. The pods it starts and
// stops are real processes, run by examples/internal/pods.
package controller

import (
	"context"
	"log/slog"
	"time"

	"github.com/converge-go/converge/examples/internal/pods"
	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/checkpoint"
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

// Finalizer is the finalizer the controller puts on every replica set
// before it starts a pod for it: deleting the replica set then waits until
// the controller has stopped its pods (see Reconciler).
const Finalizer = "replicaset.example/pods"

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
	// Checkpoint, if its Store is set, keeps the controller's desired
	// state beyond its store (reconcile.Options.Checkpoint): started while
	// the store cannot be listed, it reconciles from the checkpoint.
	Checkpoint checkpoint.Options[*ReplicaSet]
	// HeartbeatInterval is reconcile.Options.HeartbeatInterval (default
	// 2 seconds): it bounds how long an unreachable store goes unnoticed
	// and sets Checkpoint.StartAfter's default (three of it).
	HeartbeatInterval time.Duration
}

// New returns the replica set controller over s, with timings
// short enough for a demo: retries back off from 50ms to 1s. Its status
// writes go to s through the controller (Request.Store): run it under a
// manager.Manager with a lock.Elector and each carries the guard of the
// term it runs in.
func New(s store.Store[*ReplicaSet], cfg Config) (*reconcile.Controller[*ReplicaSet], error) {
	return reconcile.New(s, &Reconciler{Pods: cfg.Pods, StatusWritten: cfg.StatusWritten}, reconcile.Options[*ReplicaSet]{
		Name:              "replicaset",
		RateLimiter:       queue.NewExponential[string](50*time.Millisecond, time.Second, 0.1),
		Timeout:           10 * time.Second,
		GracePeriod:       5 * time.Second,
		Logger:            cfg.Logger,
		Sources:           []reconcile.Source{reconcile.FromChannel(cfg.Exits)},
		Prefix:            cfg.Prefix,
		Metrics:           cfg.Metrics,
		QueueMetrics:      cfg.QueueMetrics,
		Checkpoint:        cfg.Checkpoint,
		HeartbeatInterval: cfg.HeartbeatInterval,
	})
}
