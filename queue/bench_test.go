package queue

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Figures on the project's 2-core machine, 2026-11-29, from
// go test -run '^$' -bench . -benchmem ./queue
// (reconcile/internal/bench/README.md compares them with client-go and controller-runtime):
//
//	BenchmarkAddGetDone-2      89 ns/op    0 B/op   0 allocs/op
//	BenchmarkAddDuplicate-2    15 ns/op    0 B/op   0 allocs/op
//	BenchmarkParallel-2       190 ns/op    2 B/op   0 allocs/op
//	BenchmarkAddAfter-2        71 ns/op    0 B/op   0 allocs/op
//
// BenchmarkAddGetDone measures one Add, Get and Done of a distinct key on
// one goroutine.
func BenchmarkAddGetDone(b *testing.B) {
	q := New(Options[int]{})
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		q.Add(i)
		k, _ := q.Get(ctx)
		q.Done(k)
	}
}

// BenchmarkAddDuplicate measures Add of a key that is already waiting.
func BenchmarkAddDuplicate(b *testing.B) {
	q := New(Options[string]{})
	q.Add("k")
	b.ReportAllocs()
	for b.Loop() {
		q.Add("k")
	}
}

// BenchmarkParallel measures 8 workers Get/Done while producers Add over
// 10,000 keys.
func BenchmarkParallel(b *testing.B) {
	keys := make([]string, 10000)
	for i := range keys {
		keys[i] = strconv.Itoa(i)
	}
	q := New(Options[string]{})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				k, err := q.Get(ctx)
				if err != nil {
					return
				}
				q.Done(k)
			}
		})
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			q.Add(keys[i%len(keys)])
			i += 7
		}
	})
	cancel()
	wg.Wait()
}

// BenchmarkAddAfter measures delayed adds of distinct keys (the heap and
// the single timer).
func BenchmarkAddAfter(b *testing.B) {
	q := New(Options[int]{})
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		q.AddWith(i%100000, AddOptions{After: time.Duration(i%1000)*time.Millisecond + time.Hour})
	}
	q.ShutDown()
}

// BenchmarkExponentialIdle is what a controller asks its limiter on every
// reconcile (NumRequeues, then Forget after a success) while no key is
// backing off, from parallel workers.
//
//	go test ./queue -run '^$' -bench ExponentialIdle -benchmem -count 6
//
// 2026-12-01 12:37, 2 cores: 2.1–2.3 ns per pair with the count read without
// the lock; 55–61 ns before, when each call took the limiter's mutex.
func BenchmarkExponentialIdle(b *testing.B) {
	e := NewExponential[string](time.Millisecond, time.Second, 0)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if e.NumRequeues("obj-00000042") == 0 {
				e.Forget("obj-00000042")
			}
		}
	})
}
