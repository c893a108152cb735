package reconciletest

import (
	"context"
	"math/rand/v2"
	"sync"

	"github.com/converge-go/converge/reconcile"
)

// Chaotic wraps rec with the failures of real reconcilers, drawn from a
// generator seeded with seed: before rec runs, a call panics with
// probability panicRate, or hangs until its context ends with probability
// hangRate (the controller's Options.Timeout, or its shutdown, ends it).
// The same seed draws the same sequence of failures.
func Chaotic[T any](rec reconcile.Reconciler[T], seed uint64, panicRate, hangRate float64) reconcile.Reconciler[T] {
	return &chaotic[T]{rec: rec, rng: rand.New(rand.NewPCG(seed, 11)), panicRate: panicRate, hangRate: hangRate}
}

type chaotic[T any] struct {
	rec                 reconcile.Reconciler[T]
	panicRate, hangRate float64

	mu  sync.Mutex
	rng *rand.Rand
}

func (c *chaotic[T]) Reconcile(ctx context.Context, req reconcile.Request[T]) (reconcile.Result, error) {
	c.mu.Lock()
	p := c.rng.Float64()
	c.mu.Unlock()
	switch {
	case p < c.panicRate:
		panic("reconciletest: injected panic")
	case p < c.panicRate+c.hangRate:
		<-ctx.Done()
		return reconcile.Result{}, ctx.Err()
	}
	return c.rec.Reconcile(ctx, req)
}
