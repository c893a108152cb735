package main

import "github.com/converge-go/converge/examples/replicaset/replicaset"

// The controller, its resource and the pod supervisor live in the importable
// package replicaset, which other examples reuse; these names keep the demo
// reading as if they were its own.
type (
	Spec             = replicaset.Spec
	Status           = replicaset.Status
	ReplicaSet       = replicaset.ReplicaSet
	Pods             = replicaset.Pods
	Reconciler       = replicaset.Reconciler
	ControllerConfig = replicaset.ControllerConfig
	Pod              = replicaset.Pod
	EventKind        = replicaset.EventKind
	PodEvent         = replicaset.PodEvent
	Stats            = replicaset.Stats
	SupervisorConfig = replicaset.SupervisorConfig
	Supervisor       = replicaset.Supervisor
)

// Constants of package replicaset.
const (
	ConditionReady = replicaset.ConditionReady
	PodEnv         = replicaset.PodEnv
	PodStarted     = replicaset.PodStarted
	PodStopped     = replicaset.PodStopped
	PodExited      = replicaset.PodExited
)

// Functions and errors of package replicaset.
var (
	NewController       = replicaset.NewController
	NewSupervisor       = replicaset.NewSupervisor
	ErrSupervisorClosed = replicaset.ErrSupervisorClosed
	runPod              = replicaset.RunPod
)
