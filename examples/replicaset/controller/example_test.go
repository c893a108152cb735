package controller_test

import (
	"context"
	"fmt"

	"github.com/converge-go/converge/examples/replicaset/controller"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
)

// The replica set controller over an in-memory store and a world of
// pretend pods: write a spec, let it converge, read the status back.
func ExampleNew() {
	ctx, stop := context.WithCancel(context.Background())
	s := store.NewMemory[*controller.ReplicaSet]()
	pods := newFakePods()
	c, err := controller.New(s, controller.Config{Pods: pods, Exits: pods.exits})
	if err != nil {
		panic(err)
	}
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()

	obj, err := resource.PutSpec(ctx, s, "web", controller.Spec{Replicas: 3})
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
