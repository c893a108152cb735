package reconcile

import (
	"context"
	"testing"

	"github.com/converge-go/converge/store"
)

// benchReconcileLoop measures one change's way through the loop: an
// update of one key, its watch event, observe, the queue and one
// reconcile, as WaitForRevision sees it end. allocs/op is per reconcile.
func benchReconcileLoop(b *testing.B, opts Options[int]) {
	s := store.NewMemory[int]()
	defer s.Close()
	ctx := context.Background()
	obj, err := s.Create(ctx, "k", 0)
	if err != nil {
		b.Fatal(err)
	}
	opts.Name = "bench"
	c, err := New(s, ReconcilerFunc[int](func(context.Context, Request[int]) (Result, error) {
		return Result{}, nil
	}), opts)
	if err != nil {
		b.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	defer func() {
		cancel()
		<-done
	}()
	if err := c.WaitForRevision(ctx, obj.Revision); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if obj, err = s.Update(ctx, "k", i, obj.Revision); err != nil {
			b.Fatal(err)
		}
		if err := c.WaitForRevision(ctx, obj.Revision); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReconcileLoop is the loop without a Tracer: it allocates
// exactly as before Options.Tracer existed (reconcile/internal/bench
// README.md has the figures).
//
//	go test ./reconcile -run '^$' -bench 'ReconcileLoop$' -benchmem -count 5
func BenchmarkReconcileLoop(b *testing.B) { benchReconcileLoop(b, Options[int]{}) }
