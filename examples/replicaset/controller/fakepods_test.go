package controller_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/converge-go/converge/examples/internal/pods"
)

// fakePods is a world of pretend pods for the controller's tests and
// example: it counts what is done to it, can fail starts, and can kill a
// pod the way the real supervisor reports it, by sending its owner on
// exits. It is safe for concurrent use.
type fakePods struct {
	exits chan string

	mu       sync.Mutex
	pods     []pods.Pod
	nextPID  int
	starts   int
	stops    int
	failFrom int // if positive, the failFrom-th start and later ones fail
}

func newFakePods() *fakePods { return &fakePods{exits: make(chan string, 16)} }

// Running returns owner's pods, oldest first.
func (f *fakePods) Running(owner string) []pods.Pod {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []pods.Pod
	for _, p := range f.pods {
		if p.Owner == owner {
			out = append(out, p)
		}
	}
	return out
}

// Start starts a pretend pod, or fails from the failFrom-th start on.
func (f *fakePods) Start(_ context.Context, owner string, _ []string) (pods.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failFrom > 0 && f.starts+1 >= f.failFrom {
		return pods.Pod{}, errors.New("fork: resource temporarily unavailable")
	}
	f.starts++
	f.nextPID++
	p := pods.Pod{Owner: owner, PID: 1000 + f.nextPID, Started: time.Unix(int64(f.nextPID), 0)}
	f.pods = append(f.pods, p)
	return p, nil
}

// Stop ends a pod.
func (f *fakePods) Stop(_ context.Context, pod pods.Pod) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stops++
	f.removeLocked(pod.PID)
	return nil
}

// kill ends a pod as if it had died, and wakes its owner.
func (f *fakePods) kill(pod pods.Pod) {
	f.mu.Lock()
	f.removeLocked(pod.PID)
	f.mu.Unlock()
	f.exits <- pod.Owner
}

func (f *fakePods) removeLocked(pid int) {
	f.pods = slices.DeleteFunc(f.pods, func(p pods.Pod) bool { return p.PID == pid })
}

// pids returns the pids of owner's pods, oldest first.
func (f *fakePods) pids(owner string) []int {
	var out []int
	for _, p := range f.Running(owner) {
		out = append(out, p.PID)
	}
	return out
}

// counts returns how many pods were started and stopped so far.
func (f *fakePods) counts() (starts, stops int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.starts, f.stops
}

// setFailFrom makes the n-th start and later ones fail (0: none).
func (f *fakePods) setFailFrom(n int) {
	f.mu.Lock()
	f.failFrom = n
	f.mu.Unlock()
}

// snapshot is the world as reconciletest.Env.CheckIdempotent compares it.
func (f *fakePods) snapshot() any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.pods)
}
