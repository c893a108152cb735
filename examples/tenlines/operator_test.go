package tenlines_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/external"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// VMSpec is a VM as users want it; VMStatus holds what the kit records.
type (
	VMSpec   struct{ Size int }
	VMStatus struct{ External external.Record }
	VM       = resource.Resource[VMSpec, VMStatus]
)

// cloud stands for an API of VMs without idempotency keys: every create
// makes a new VM, tagged with the kit's mark.
var cloud = struct {
	sync.Mutex
	vms  map[string]vmRecord
	next int
}{vms: map[string]vmRecord{}}

type vmRecord struct {
	size int
	mark external.Mark
}

func observe(_ context.Context, d external.Desired[VMSpec]) (external.Observation[VMStatus], error) {
	cloud.Lock()
	defer cloud.Unlock()
	vm, ok := cloud.vms[d.Name]
	switch {
	case !ok:
		return external.Observation[VMStatus]{State: external.Absent}, nil
	case vm.size != d.Spec.Size:
		return external.Observation[VMStatus]{State: external.Differs}, nil
	}
	return external.Observation[VMStatus]{State: external.UpToDate}, nil
}

func create(_ context.Context, d external.Desired[VMSpec]) (string, error) {
	cloud.Lock()
	defer cloud.Unlock()
	cloud.next++
	id := "vm-" + strconv.Itoa(cloud.next)
	cloud.vms[id] = vmRecord{size: d.Spec.Size, mark: d.Mark}
	return id, nil
}

func update(_ context.Context, d external.Desired[VMSpec], _ external.Observation[VMStatus]) error {
	cloud.Lock()
	defer cloud.Unlock()
	cloud.vms[d.Name] = vmRecord{size: d.Spec.Size, mark: cloud.vms[d.Name].mark}
	return nil
}

func del(_ context.Context, d external.Desired[VMSpec]) error {
	cloud.Lock()
	defer cloud.Unlock()
	delete(cloud.vms, d.Name)
	return nil
}

func list(context.Context) ([]external.Listed, error) {
	cloud.Lock()
	defer cloud.Unlock()
	var out []external.Listed
	for id, vm := range cloud.vms {
		out = append(out, external.Listed{Name: id, Mark: vm.mark})
	}
	return out, nil
}

// The README's operator in ten lines: the domain is the five functions
// above; the kit composes the finalizer, marks, prune, drift, conditions
// and creates safe across a crash.
func Example_operator() {
	ctx, cancel := context.WithCancel(context.Background())

	// README: operator
	s, _ := apistore.New(store.NewMemory[*VM](), resource.Kind[VMSpec, VMStatus]{})
	world := external.World[VMSpec, VMStatus]{Observe: observe, Create: create, Update: update, Delete: del, List: list}
	vms, _ := external.New(s, world, external.Options[VMSpec, VMStatus]{Name: "vmop", Prefix: "vms/",
		Record: func(st *VMStatus) *external.Record { return &st.External }}) // where the kit keeps the VM's name
	c, _ := reconcile.New(s, vms, reconcile.Options[*VM]{Name: "vms", Prefix: "vms/", Sources: vms.Sources()})
	pruner, _ := vms.Pruner(c) // deletes the VMs it marked whose key is gone
	go c.Run(ctx)
	go pruner.Run(ctx)
	// end README

	obj, _ := resource.PutSpec(ctx, s, "vms/web", VMSpec{Size: 2})
	_ = c.WaitForRevision(ctx, obj.Revision)
	obj, _ = s.Get(ctx, "vms/web")
	cloud.Lock()
	fmt.Println(obj.Value.Status.External.Name, len(cloud.vms))
	cloud.Unlock()
	cancel()
	// Output: vm-1 1
}
