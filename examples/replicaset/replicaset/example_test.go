package replicaset_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/converge-go/converge/examples/replicaset/replicaset"
	"github.com/converge-go/converge/reconcile/resource"
	"github.com/converge-go/converge/store"
)

// memoryPods is a world of pretend pods, for the example.
type memoryPods struct {
	mu   sync.Mutex
	next int
	pods map[string][]replicaset.Pod
}

func (m *memoryPods) Running(owner string) []replicaset.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]replicaset.Pod(nil), m.pods[owner]...)
}

func (m *memoryPods) Start(_ context.Context, owner string, _ []string) (replicaset.Pod, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.next++
	p := replicaset.Pod{PID: 1000 + m.next, Owner: owner}
	m.pods[owner] = append(m.pods[owner], p)
	return p, nil
}

func (m *memoryPods) Stop(_ context.Context, pod replicaset.Pod) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	pods := m.pods[pod.Owner]
	for i, p := range pods {
		if p.PID == pod.PID {
			m.pods[pod.Owner] = append(pods[:i:i], pods[i+1:]...)
		}
	}
	return nil
}

// The replica set controller over an in-memory store and a world of
// pretend pods: write a spec, let it converge, read the status back.
func ExampleNewController() {
	ctx, stop := context.WithCancel(context.Background())
	s := store.NewMemory[*replicaset.ReplicaSet]()
	pods := &memoryPods{pods: map[string][]replicaset.Pod{}}
	c, err := replicaset.NewController(s, replicaset.ControllerConfig{Pods: pods})
	if err != nil {
		panic(err)
	}
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()

	obj, err := resource.PutSpec(ctx, s, "web", replicaset.Spec{Replicas: 3})
	if err != nil {
		panic(err)
	}
	c.WaitForRevision(ctx, obj.Revision)
	last, _ := s.Revision(ctx) // the status write
	c.WaitForRevision(ctx, last)

	obj, _ = s.Get(ctx, "web")
	fmt.Printf("spec %d, running %d, status %d ready (generation %d observed)\n",
		obj.Value.Spec.Replicas, len(pods.Running("web")), obj.Value.Status.ReadyReplicas, obj.Value.ObservedGeneration)
	stop()
	<-done
	// Output:
	// spec 3, running 3, status 3 ready (generation 1 observed)
}
