package reconcile_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/store"
)

// A minimal controller: desired replica counts in a store, a "world" that
// the reconciler converges toward them, and status recorded with a
// compare-and-swap write against the revision that was reconciled.
func Example() {
	type replicas struct {
		Want  int // spec
		Ready int // status
	}
	ctx, stop := context.WithCancel(context.Background())
	s := store.NewMemory[*replicas]()
	s.Create(ctx, "web", &replicas{Want: 3})

	var mu sync.Mutex
	running := map[string]int{} // the world
	rec := reconcile.ReconcilerFunc[*replicas](func(ctx context.Context, req reconcile.Request[*replicas]) (reconcile.Result, error) {
		mu.Lock()
		defer mu.Unlock()
		if req.Deleted {
			delete(running, req.Key)
			return reconcile.Result{}, nil
		}
		want := req.Object.Value.Want
		running[req.Key] = want // act: start or stop processes
		if req.Object.Value.Ready == want {
			return reconcile.Result{}, nil // nothing to change: change nothing
		}
		status := *req.Object.Value // never mutate a shared value
		status.Ready = want
		_, err := req.Store.Update(ctx, req.Key, &status, req.Object.Revision) // through the controller
		return reconcile.Result{}, err
	})

	c, err := reconcile.New(s, rec, reconcile.Options[*replicas]{Name: "replicas", Workers: 4})
	if err != nil {
		panic(err)
	}
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()

	// Scale up: a read-modify-write that retries if it races the
	// controller's status write.
	obj, err := store.Modify(ctx, s, "web", func(cur *replicas) (*replicas, error) {
		next := *cur
		next.Want = 5
		return &next, nil
	})
	if err != nil {
		panic(err)
	}
	c.WaitForRevision(ctx, obj.Revision)
	// That reconcile wrote status, one more revision: wait for it too.
	last, _ := s.Revision(ctx)
	c.WaitForRevision(ctx, last)

	obj, _ = s.Get(ctx, "web")
	mu.Lock()
	fmt.Printf("want %d, running %d, status says %d\n", obj.Value.Want, running["web"], obj.Value.Ready)
	mu.Unlock()
	stop()
	<-done
	// Output:
	// want 5, running 5, status says 5
}

// Sources wake keys from outside the primary store: here, a channel of
// events from the world (a process exited).
func ExampleFromChannel() {
	ctx, stop := context.WithCancel(context.Background())
	s := store.NewMemory[string]()
	exited := make(chan string)
	woken := make(chan string)
	rec := reconcile.ReconcilerFunc[string](func(ctx context.Context, req reconcile.Request[string]) (reconcile.Result, error) {
		woken <- req.Key
		return reconcile.Result{}, nil
	})
	c, _ := reconcile.New(s, rec, reconcile.Options[string]{
		Name:    "supervisor",
		Sources: []reconcile.Source{reconcile.FromChannel(exited)},
	})
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()
	exited <- "worker-7"
	fmt.Println("reconciling", <-woken)
	stop()
	<-done
	// Output:
	// reconciling worker-7
}
