package reconciletest_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/reconciletest"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/faultstore"
)

// Wrap puts a reconciler's store behind store/faultstore and counts the
// writes that went through in Env's Counts; the faults themselves (rates,
// outages, watch breaks) are faultstore's. The function below is the body
// of a test (an Example cannot be handed a *testing.T, so it only compiles).
func ExampleWrap() {
	_ = func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			env := reconciletest.NewEnv(t)
			s := reconciletest.Wrap(env, store.NewMemory[*int](), faultstore.Options{
				Rand:  rand.New(rand.NewPCG(1, 0)),
				Rates: faultstore.Rates{Error: 0.1, Conflict: 0.05, BreakWatchEvery: 100},
			})
			s.SetOutage(faultstore.Silent) // calls fail, watches stay open and quiet
			s.SetOutage(faultstore.Up)
			_ = env.Converge(time.Minute).Writes
		})
	}
}

// TestScaler shows the shape of a reconciler test: a controller over a
// faulty store, run to convergence on the fake clock, then checked for
// idempotency and per-key exclusivity.
func TestScaler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		env := reconciletest.NewEnv(t)
		mem := store.NewMemory[*int]()
		s := reconciletest.Wrap(env, mem, faultstore.Options{Rand: rand.New(rand.NewPCG(1, 0)), Rates: faultstore.Rates{Error: 0.2}})
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
