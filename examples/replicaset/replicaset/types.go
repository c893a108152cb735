// Package replicaset is the controller of the replicaset example, in a
// package of its own so that other examples can reuse it: the stored
// resource (Spec, Status, ReplicaSet), the reconciler and its controller,
// the Supervisor that runs pods as child processes, and the pod mode those
// processes run (RunPod).
package replicaset

import "github.com/converge-go/converge/reconcile/resource"

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
