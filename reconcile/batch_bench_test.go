package reconcile

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/converge-go/converge/store"
)

// slowAPI is a world whose every call costs a fixed delay, however many
// keys it carries (one round trip to a batch API).
type slowAPI struct{ cost time.Duration }

func (a slowAPI) Reconcile(context.Context, Request[int]) (Result, error) {
	time.Sleep(a.cost)
	return Result{}, nil
}

func (a slowAPI) ReconcileBatch(_ context.Context, reqs []Request[int]) []BatchResult {
	time.Sleep(a.cost)
	return make([]BatchResult, len(reqs))
}

// BenchmarkBatchAgainstSingleKeyCalls converges a store of n objects
// (listed at start) with 8 workers against a world that costs a fixed 1 ms
// per call: one key per call, then 100 keys per call (Options.BatchSize).
// One op is the whole convergence, from Run to WaitForRevision. Target
// (issue 15): at 100,000 objects, batches of 100 converge at least 20×
// faster.
//
//	go test ./reconcile -run '^$' -bench BatchAgainst -benchtime 1x -count 3
//
// 2026-12-01 04:35 UTC, 2-core AMD EPYC, nothing else running (load
// average 2.9 falling from earlier work), -count 3:
//
//	objects=10000/batch=1     1.600-1.607 s/op
//	objects=10000/batch=100   0.060-0.070 s/op   (23-27× faster)
//	objects=100000/batch=1    16.7-17.1 s/op
//	objects=100000/batch=100  0.626-0.660 s/op   (25-27× faster)
//
// Target met. The one-key case is bound by the calls (100,000 of 1 ms
// each, 8 at a time; a 1 ms sleep takes about 1.3 ms here); the batch case
// by listing the objects into the cache and settling each key (CPU).
// Measured at 03:12 under load 7-9 from other work, the 100,000-object
// ratio was only 7-15×: the batch case is CPU-bound and suffers most.
func BenchmarkBatchAgainstSingleKeyCalls(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		s := store.NewMemory[int]()
		var rev int64
		for i := range n {
			obj, err := s.Create(context.Background(), fmt.Sprintf("o/%07d", i), i)
			if err != nil {
				b.Fatal(err)
			}
			rev = obj.Revision
		}
		for _, size := range []int{1, 100} {
			b.Run(fmt.Sprintf("objects=%d/batch=%d", n, size), func(b *testing.B) {
				for b.Loop() {
					c, err := New(s, slowAPI{cost: time.Millisecond}, Options[int]{Name: "bench", Workers: 8, BatchSize: size})
					if err != nil {
						b.Fatal(err)
					}
					ctx, cancel := context.WithCancel(context.Background())
					done := make(chan error, 1)
					go func() { done <- c.Run(ctx) }()
					if err := c.WaitForRevision(context.Background(), rev); err != nil {
						b.Fatal(err)
					}
					cancel()
					if err := <-done; err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
