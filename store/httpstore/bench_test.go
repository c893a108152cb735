package httpstore_test

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/converge-go/converge/internal/cputime"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
	"github.com/converge-go/converge/store/httpstore/httpstoretest"
)

// benchValue is shaped like reconcile/internal/bench's LoadValue.
type benchValue struct {
	Counter int64  `json:"counter"`
	Writer  int    `json:"writer"`
	Note    string `json:"note"`
}

// BenchmarkServedUpdate measures the served hot path of the load benchmark
// (reconcile/internal/bench, cmd/httpload): a client's Get and compare-and-swap Update
// over loopback HTTP to a handler serving a store that keeps JSON bytes (a
// store.View over a memory byte store: like boltstore without the disk),
// with 0 or 4 watches of the whole prefix that must each receive every
// write before the benchmark ends. ns/op and allocs/op are per Get+Update
// pair, client, server and watchers together, 8 goroutines; cpu-ns/op is
// the process's CPU time (user and system) per pair, which, unlike ns/op,
// hardly depends on what else the machine runs.
//
//	go test -run '^$' -bench BenchmarkServedUpdate -benchmem -count 6 ./store/httpstore
func BenchmarkServedUpdate(b *testing.B) {
	for _, watchers := range []int{0, 4} {
		b.Run(fmt.Sprintf("watchers=%d", watchers), func(b *testing.B) {
			benchmarkServedUpdate(b, watchers)
		})
	}
}

func benchmarkServedUpdate(b *testing.B, watchers int) {
	ctx := b.Context()
	raw := store.NewMemory[[]byte](store.WithHistory(1<<22), store.WithWatchLag(1<<22))
	b.Cleanup(func() { _ = raw.Close() })
	c := httpstoretest.Serve(b, store.Store[benchValue](store.NewView[benchValue](raw, store.JSON[benchValue]{})), httpstoretest.Options{})
	const keys = 64
	var start int64
	for i := range keys {
		obj, err := c.Create(ctx, fmt.Sprintf("bench/k-%03d", i), benchValue{Note: "a value of modest size, as status objects go"})
		if err != nil {
			b.Fatal(err)
		}
		start = obj.Revision
	}
	var written atomic.Int64
	var wg sync.WaitGroup
	done := make(chan struct{})
	for range watchers {
		w, err := c.Watch(ctx, "bench/", start)
		if err != nil {
			b.Fatal(err)
		}
		wg.Go(func() {
			defer w.Stop()
			var got int64
			end := done
			for {
				select {
				case _, ok := <-w.Events():
					if !ok {
						b.Errorf("watch ended: %v", w.Err())
						return
					}
					got++
				case <-end:
					end = nil // the writers are done: wait for the rest
				}
				// A lost event leaves this watcher waiting: the benchmark
				// then fails with go test's timeout.
				if end == nil && got == written.Load() {
					return
				}
			}
		})
	}
	var next atomic.Int64
	b.SetParallelism(4) // 8 goroutines on the 2-core machine the figures come from
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cputime.Process()
	b.RunParallel(func(pb *testing.PB) {
		key := fmt.Sprintf("bench/k-%03d", next.Add(1)%keys)
		for pb.Next() {
			obj, err := c.Get(ctx, key)
			if err != nil {
				b.Error(err)
				return
			}
			obj.Value.Counter++
			if _, err := c.Update(ctx, key, obj.Value, obj.Revision); err == nil {
				written.Add(1)
			} else if !errors.Is(err, store.ErrConflict) {
				b.Error(err)
				return
			}
		}
	})
	close(done)
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(cputime.Process()-cpu0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkHandlerUpdate measures the handler's write path alone, without
// a network: a compare-and-swap update of a benchValue sent as JSON,
// decoded, checked and answered, over a memory store of Go values and over
// a store that keeps store.JSON bytes (a store.View over a memory byte
// store). The body is what a Go client sends, or (another-form) the same
// value with its members in another order, which the handler checks by
// parsing. cpu-ns/op is the process's CPU time per update, which hardly
// depends on what else the machine runs.
//
//	go test -run '^$' -bench BenchmarkHandlerUpdate -benchmem -count 6 ./store/httpstore
func BenchmarkHandlerUpdate(b *testing.B) {
	const (
		client  = `{"counter":41,"writer":3,"note":"a value of modest size, as status objects go"}`
		another = `{"note":"a value of modest size, as status objects go","writer":3,"counter":41}`
	)
	for _, bc := range []struct{ name, backend, body string }{
		{"memory", "memory", client},
		{"view", "view", client},
		{"memory/another-form", "memory", another},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var s store.Store[benchValue]
			if bc.backend == "memory" {
				m := store.NewMemory[benchValue]()
				b.Cleanup(func() { _ = m.Close() })
				s = m
			} else {
				raw := store.NewMemory[[]byte]()
				b.Cleanup(func() { _ = raw.Close() })
				s = store.NewView[benchValue](raw, store.JSON[benchValue]{})
			}
			benchmarkHandlerUpdate(b, s, []byte(bc.body))
		})
	}
}

func benchmarkHandlerUpdate(b *testing.B, s store.Store[benchValue], body []byte) {
	h, err := httpstore.NewHandler(s)
	if err != nil {
		b.Fatal(err)
	}
	obj, err := s.Create(b.Context(), "bench/k", benchValue{})
	if err != nil {
		b.Fatal(err)
	}
	rev := obj.Revision
	b.ReportAllocs()
	cpu0 := cputime.Process()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:7007/v1/update?key=bench/k&revision="+strconv.FormatInt(rev, 10), bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
		rev++
	}
	b.ReportMetric(float64(cputime.Process()-cpu0)/float64(b.N), "cpu-ns/op")
}
