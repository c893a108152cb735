package reconciletest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/reconciletest"
	"github.com/converge-go/converge/store"
)

// A fault-injecting store: seeded rates of unavailable errors and conflicts,
// outages on demand, and a count of the writes that went through.
func ExampleNewStore() {
	ctx := context.Background()
	s := reconciletest.NewStore(store.NewMemory[string](), reconciletest.Faults{Seed: 42, ErrorRate: 0.5})
	var failed int
	for i := range 10 {
		if _, err := s.Create(ctx, fmt.Sprint("key-", i), "value"); errors.Is(err, store.ErrUnavailable) {
			failed++
		}
	}
	fmt.Println("writes that went through:", s.Writes(), "injected failures:", failed)

	s.SetDown(true)
	_, err := s.Get(ctx, "key-0")
	fmt.Println("during an outage:", errors.Is(err, store.ErrUnavailable))
	// Output:
	// writes that went through: 7 injected failures: 3
	// during an outage: true
}

// TestScaler shows the shape of a reconciler test: a controller over a
// faulty store, run to convergence on the fake clock, then checked for
// idempotency and per-key exclusivity.
func TestScaler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		env := reconciletest.NewEnv(t)
		mem := store.NewMemory[*int]()
		s := reconciletest.Wrap(env, mem, reconciletest.Faults{Seed: 1, ErrorRate: 0.2})
		world := map[string]int{}
		rec := reconcile.ReconcilerFunc[*int](func(ctx context.Context, req reconcile.Request[*int]) (reconcile.Result, error) {
			if _, err := s.Get(ctx, req.Key); err != nil && !errors.Is(err, store.ErrNotFound) {
				return reconcile.Result{}, err // the store is flaky: retry with backoff
			}
			if req.Deleted {
				delete(world, req.Key)
			} else {
				world[req.Key] = *req.Object.Value
			}
			return reconcile.Result{}, nil
		})
		c, err := reconcile.New(s, reconciletest.Exclusive(t, reconcile.Reconciler[*int](rec)),
			reconcile.Options[*int]{Name: "scaler", Metrics: env.Metrics()})
		if err != nil {
			t.Fatal(err)
		}
		three := 3
		mem.Create(ctx, "web", &three)
		env.Start(c)
		counts := env.Converge(time.Minute)
		if world["web"] != 3 || counts.Reconciles == 0 {
			t.Fatalf("world %v after %+v", world, counts)
		}
		env.CheckIdempotent(time.Minute, func() any { return fmt.Sprint(world) })
	})
}
