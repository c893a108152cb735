package external_test

import (
	"context"
	"fmt"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/external"
	"github.com/converge-go/converge/reconcile/kit/external/externaltest"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// An operator of an external system written with the kit: the World is
// the domain (here a fake one, where every create makes a new object);
// the kit's Reconciler runs in an ordinary controller.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	type (
		Spec   struct{ Size int }
		Status struct{ External external.Record }
		VM     = resource.Resource[Spec, Status]
	)
	s, _ := apistore.New(store.NewMemory[*VM](), resource.Kind[Spec, Status]{})
	cloud := externaltest.NewFake[Spec]()
	world := externaltest.Client(cloud, externaltest.FakeOptions[Spec, Status]{}) // yours: Observe, Create, Update, Delete, List

	vms, _ := external.New(s, world, external.Options[Spec, Status]{
		Name: "vmop", Prefix: "vms/",
		Record: func(st *Status) *external.Record { return &st.External },
	})
	c, _ := reconcile.New(s, vms, reconcile.Options[*VM]{Name: "vms", Prefix: "vms/", Sources: vms.Sources()})
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() { cancel(); <-done }()

	obj, _ := resource.PutSpec(ctx, s, "vms/web", Spec{Size: 2})
	_ = c.WaitForRevision(ctx, obj.Revision)
	obj, _ = s.Get(ctx, "vms/web")
	ready, _ := resource.FindCondition(obj.Value.Conditions, external.ConditionReady)
	fmt.Println("external name:", obj.Value.Status.External.Name, "ready:", ready.Status, ready.Reason)
	fmt.Println("objects in the world:", len(cloud.Objects()))
	// Output:
	// external name: obj-1 ready: True Available
	// objects in the world: 1
}
