package demo

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/converge-go/converge/examples/internal/pods"
	"github.com/converge-go/converge/examples/replicaset/controller"
	"github.com/converge-go/converge/store/apistore"
)

// Converged holds only when the status records exactly the running pods
// (in any running order), as many as the spec asks, for the latest
// generation: the demos move on from a step on nothing less.
func TestConvergedRequiresExactlyTheRunningPodsForTheLatestGeneration(t *testing.T) {
	running := []pods.Pod{{PID: 12}, {PID: 11}}
	rs := func(replicas int, observed int64, pids ...int) *controller.ReplicaSet {
		return &controller.ReplicaSet{
			Meta: apistore.Meta{Generation: 2}, ObservedGeneration: observed,
			Spec:   controller.Spec{Replicas: replicas},
			Status: controller.Status{ReadyReplicas: len(pids), Pods: pids},
		}
	}
	assert.True(t, Converged(rs(2, 2, 11, 12), running))
	assert.False(t, Converged(rs(2, 1, 11, 12), running), "status of an older generation")
	assert.False(t, Converged(rs(3, 2, 11, 12), running), "fewer pods than the spec asks")
	assert.False(t, Converged(rs(2, 2, 11, 13), running), "status names a pod that is not running")
	assert.False(t, Converged(rs(2, 2, 11), running), "status misses a running pod")
}
