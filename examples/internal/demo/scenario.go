package demo

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/converge-go/converge/examples/internal/pods"
	"github.com/converge-go/converge/examples/internal/poll"
	"github.com/converge-go/converge/examples/replicaset/controller"
	"github.com/converge-go/converge/store"
)

// WaitFor checks cond every 10ms until it holds, returns an error, ctx ends
// or limit passes; what names the condition in the error (poll.Until).
func WaitFor(ctx context.Context, what string, limit time.Duration, cond func() (bool, error)) error {
	return poll.Until(ctx, limit, 10*time.Millisecond, "waiting for "+what, cond)
}

// Step is one step of a demo's scenario.
type Step func(ctx context.Context) error

// Play runs the steps in order and stops at the first that fails.
func Play(ctx context.Context, steps ...Step) error {
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// RunningPods is what WaitConverged reads of the world: a
// pods.Supervisor, or a view of the pods another process supervises.
type RunningPods interface {
	// Running returns owner's running pods, oldest first.
	Running(owner string) []pods.Pod
}

// WaitConverged waits, within limit, until want pods of the replica set
// key run, the status stored in s records exactly them for the latest
// generation (Converged), and also, if not nil, holds for the stored
// object. It returns that object; what names the step in its error.
func WaitConverged(ctx context.Context, what string, s store.Store[*controller.ReplicaSet], sup RunningPods, key string, want int,
	limit time.Duration, also func(store.Object[*controller.ReplicaSet]) bool,
) (obj store.Object[*controller.ReplicaSet], err error) {
	err = WaitFor(ctx, fmt.Sprintf("%s: %s and their status", what, Count(want, "pod")), limit, func() (bool, error) {
		running := sup.Running(key)
		if len(running) != want {
			return false, nil
		}
		cur, err := s.Get(ctx, key)
		if err != nil {
			return false, err
		}
		if !Converged(cur.Value, running) || (also != nil && !also(cur)) {
			return false, nil
		}
		obj = cur
		return true, nil
	})
	return obj, err
}

// Converged reports whether rs's status records exactly the running pods,
// for the latest generation, and that they are as many as the spec asks.
func Converged(rs *controller.ReplicaSet, running []pods.Pod) bool {
	pids := make([]int, len(running))
	for i, p := range running {
		pids[i] = p.PID
	}
	slices.Sort(pids)
	return rs.ObservedGeneration == rs.Generation &&
		rs.Spec.Replicas == len(running) &&
		rs.Status.ReadyReplicas == len(running) &&
		slices.Equal(rs.Status.Pods, pids)
}

// StopPods closes sup, which stops every pod, and checks that no process
// or process group of a pod it ever started remains. It returns those
// that do, with an error if there are any.
func StopPods(sup *pods.Supervisor, say *Narrator) (leftover []int, err error) {
	sup.Close()
	leftover = sup.Leftovers()
	if len(leftover) > 0 {
		return leftover, fmt.Errorf("pods left running after shutdown: %v", leftover)
	}
	say.Say("no pod left: all %d pids started are gone", len(sup.Started()))
	return nil, nil
}
