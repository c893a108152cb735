package reconcile_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
)

type taskSpec struct{ Command string }

// taskStatus records intent before the side effect: LaunchID names the one
// process this job may have, chosen and written before it is started.
type taskStatus struct {
	LaunchID string
	Phase    string // "Launching", then "Running"
}

type task = resource.Resource[taskSpec, taskStatus]

// processes stands for the world: started processes by launch ID. Starting
// an ID that already runs does nothing, so relaunching after a crash is safe.
type processes struct {
	mu      sync.Mutex
	running map[string]string
}

func (p *processes) start(id, command string) (started bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.running[id]; ok {
		return false
	}
	p.running[id] = command
	return true
}

// Example_sideEffectsThatMustNotRepeat shows the pattern for actions that
// must happen at most once even across crashes: record the intent with a
// compare-and-swap first (through Request.Store, so a deposed leader's
// intent is refused), then act under the recorded ID, then record the
// result. A reconcile that finds an intent already recorded adopts what
// runs under its ID, or relaunches it under the same ID: never a second
// process.
func Example_sideEffectsThatMustNotRepeat() {
	ctx := context.Background()
	s := store.NewMemory[*task]()
	world := &processes{running: map[string]string{}}
	launches := 0

	rec := reconcile.ReconcilerFunc[*task](func(ctx context.Context, req reconcile.Request[*task]) (reconcile.Result, error) {
		if req.Deleted {
			return reconcile.Result{}, nil
		}
		obj := req.Object
		st := obj.Value.Status
		if st.LaunchID == "" {
			// 1. Record the intent. If this write conflicts, nothing was
			// started: the newer object is reconciled instead.
			st = taskStatus{LaunchID: fmt.Sprintf("%s@%d", req.Key, obj.Revision), Phase: "Launching"}
			var err error
			if obj, err = resource.WriteStatus(ctx, req.Store, obj, st); err != nil {
				return reconcile.Result{}, err
			}
		}
		// 2. Act under the recorded ID: a crash before or after this line
		// leads to the same single process.
		if world.start(st.LaunchID, obj.Value.Spec.Command) {
			launches++
		}
		// 3. Record the result.
		if st.Phase != "Running" {
			st.Phase = "Running"
			if _, err := resource.WriteStatus(ctx, req.Store, obj, st); err != nil {
				return reconcile.Result{}, err
			}
		}
		return reconcile.Result{}, nil
	})

	c, err := reconcile.New(s, rec, reconcile.Options[*task]{Name: "jobs"})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- c.Run(ctx) }()

	obj, _ := resource.PutSpec(ctx, s, "jobs/backup", taskSpec{Command: "backup --all"})
	_ = c.WaitForRevision(ctx, obj.Revision)
	c.Enqueue("jobs/backup") // a restart or resync reconciles it again
	cancel()
	<-stopped

	got, _ := s.Get(context.Background(), "jobs/backup")
	fmt.Println("phase:", got.Value.Status.Phase)
	fmt.Println("processes started:", launches)
	// Output:
	// phase: Running
	// processes started: 1
}
