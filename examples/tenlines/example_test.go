package tenlines_test

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
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

// teardown stops what key runs, if anything: what is already gone is
// done.
func teardown(_ context.Context, key string) error {
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
	s, _ := apistore.New(store.NewMemory[*App](), resource.Kind[AppSpec, AppStatus]{}) // over bolt, etcd, HTTP alike
	rec := reconcile.ReconcilerFunc[*App](func(ctx context.Context, req reconcile.Request[*App]) (reconcile.Result, error) {
		obj, deleting, err := resource.Finalize(ctx, req, "example.com/teardown", func(ctx context.Context) error {
			return teardown(ctx, req.Key) // a delete waits for it, even one made while no controller ran
		})
		if deleting || err != nil {
			return reconcile.Result{}, err
		}
		status, err := ensure(ctx, req.Key, obj.Value.Spec) // compare and act; idempotent
		if err != nil {
			return reconcile.Result{}, err // backs off per key; reconcile.Terminal(err) does not retry
		}
		_, err = resource.WriteStatus(ctx, req.Store, obj, status) // CAS through the controller
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
	fmt.Printf("running %s, generation %d observed, finalizers %v\n", obj.Value.Status.Running, obj.Value.ObservedGeneration, obj.Value.Finalizers)

	// A delete only marks the object; the reconcile's teardown, then the
	// finalizer's removal, make it go.
	marked, err := s.Delete(ctx, "apps/web", obj.Revision)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := c.WaitForRevision(ctx, marked); err != nil {
		fmt.Println(err)
		return
	}
	_, err = s.Get(ctx, "apps/web")
	world.Lock()
	fmt.Printf("deleted: %v, apps running: %d\n", errors.Is(err, store.ErrNotFound), len(world.running))
	world.Unlock()
	// Output:
	// running web:1, generation 1 observed, finalizers [example.com/teardown]
	// deleted: true, apps running: 0
}
