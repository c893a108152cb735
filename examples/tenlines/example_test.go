package tenlines_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/resource"
	"github.com/converge-go/converge/store"
)

// AppSpec is what an app should run; AppStatus what it was seen running.
type (
	AppSpec   struct{ Image string }
	AppStatus struct{ Running string }
	App       = resource.Resource[AppSpec, AppStatus]
)

// world stands for the processes the controller manages: the image each
// app runs.
var world = struct {
	sync.Mutex
	running map[string]string
}{running: map[string]string{}}

// ensure makes key run spec, if it does not already, and returns what runs.
func ensure(_ context.Context, key string, spec AppSpec) (AppStatus, error) {
	world.Lock()
	defer world.Unlock()
	if world.running[key] != spec.Image {
		world.running[key] = spec.Image // stop the old process, start the new one
	}
	return AppStatus{Running: world.running[key]}, nil
}

// teardown stops what key runs, if anything.
func teardown(_ context.Context, key string, _ *App) error {
	world.Lock()
	defer world.Unlock()
	delete(world.running, key)
	return nil
}

// The README's ten lines, run: the reconciler acts on the world, then
// writes what it saw through its controller (Request.Store).
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// README: ten lines
	s := store.NewMemory[*App]() // or boltstore.Open, etcdstore.New
	rec := reconcile.ReconcilerFunc[*App](func(ctx context.Context, req reconcile.Request[*App]) (reconcile.Result, error) {
		if req.Deleted {
			return reconcile.Result{}, teardown(ctx, req.Key, req.Object.Value) // last known value
		}
		status, err := ensure(ctx, req.Key, req.Object.Value.Spec) // compare and act; idempotent
		if err != nil {
			return reconcile.Result{}, err // backs off per key; reconcile.Terminal(err) does not retry
		}
		_, err = resource.WriteStatus(ctx, req.Store, req.Object, status) // CAS through the controller
		return reconcile.Result{}, err
	})
	c, _ := reconcile.New(s, rec, reconcile.Options[*App]{Name: "apps", Workers: 8})
	go c.Run(ctx) // list+watch cache, sources, queue, workers; keeps healing if the store goes away
	// end README

	obj, err := resource.PutSpec(ctx, s, "apps/web", AppSpec{Image: "web:1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := c.WaitForRevision(ctx, obj.Revision); err != nil {
		fmt.Println(err)
		return
	}
	obj, _ = s.Get(ctx, "apps/web")
	fmt.Printf("running %s, generation %d observed\n", obj.Value.Status.Running, obj.Value.ObservedGeneration)
	// Output:
	// running web:1, generation 1 observed
}
