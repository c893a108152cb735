package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync/atomic"

	"github.com/converge-go/converge/reconcile/internal/bench"
	"github.com/converge-go/converge/store"
)

// sample is what one run of one implementation over one store size
// measured.
type sample struct {
	impl    string
	objects int
	// memory says this was a memory run (heapGrowth set, res zero).
	memory bool
	// res is the implementation's own result (times, reconciles,
	// allocations). Zero for a memory run.
	res bench.E2EResult
	// heapGrowth is the live heap when the last status write succeeded
	// (controller still running) minus the live heap just before the run
	// started (store populated), both right after a full collection. Set
	// only by a memory run.
	heapGrowth int64
	// idleHeapGrowth is the same once the process had gone idle after the
	// last status write: every other object has been reconciled after
	// its echo (the last written key's echo waits for the probe). idle
	// says whether it went idle within idleLimit.
	idleHeapGrowth int64
	idle           bool
}

// liveHeap collects garbage and returns the heap the collection found
// live.
func liveHeap() int64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// probeStore passes every call to the store it embeds and, when the
// objects-th status write has succeeded, measures the live heap twice
// inside that Update, before it returns, so the implementation is still
// running and holds its cache of every object: first at once (the last
// echoes still in flight or queued), then once the process has gone idle
// (every other key settled; the written key stays busy in this call, so
// the run cannot finish and shut down before the second measurement).
type probeStore struct {
	bench.E2EStore
	objects        int64
	writes         atomic.Int64
	heap, idleHeap atomic.Int64
	idle           atomic.Bool
	// profile, if not nil, is called right after the idle measurement's
	// collection (a heap profile then shows what it measured).
	profile func()
}

func (p *probeStore) Update(ctx context.Context, key string, value *bench.Pair, revision int64, guards ...store.Guard) (store.Object[*bench.Pair], error) {
	obj, err := p.E2EStore.Update(ctx, key, value, revision, guards...)
	if err == nil && p.writes.Add(1) == p.objects {
		p.heap.Store(liveHeap())
		p.idle.Store(waitIdle())
		p.idleHeap.Store(liveHeap())
		if p.profile != nil {
			p.profile()
		}
	}
	return obj, err
}

// runOnce runs impl over a fresh memory store holding keys, made with
// opts. A timed run records impl's result; a memory run (memory true)
// probes the live heap at the last status write instead, which stops the
// world for a collection in the middle of the run, so its times are not
// kept. If profile is not nil, a memory run calls it at the probe.
func runOnce(impl bench.E2EImpl, keys []string, opts []store.MemoryOption, workers int, memory bool, profile func()) (sample, error) {
	ctx := context.Background()
	mem := store.NewMemory[*bench.Pair](opts...)
	defer mem.Close()
	if err := bench.Populate(ctx, mem, keys); err != nil {
		return sample{}, err
	}
	var s bench.E2EStore = mem
	probe := &probeStore{E2EStore: mem, objects: int64(len(keys)), profile: profile}
	if memory {
		s = probe
	}
	before := liveHeap()
	res, err := impl.Run(s, keys, workers)
	if err != nil {
		return sample{}, fmt.Errorf("%s over %d objects: %w", impl.Name, len(keys), err)
	}
	if res.Writes != int64(len(keys)) {
		return sample{}, fmt.Errorf("%s over %d objects: %d status writes", impl.Name, len(keys), res.Writes)
	}
	if err := bench.CheckConverged(ctx, mem, keys); err != nil {
		return sample{}, fmt.Errorf("%s over %d objects: %w", impl.Name, len(keys), err)
	}
	out := sample{impl: impl.Name, objects: len(keys), memory: memory}
	if memory {
		out.heapGrowth = probe.heap.Load() - before
		out.idleHeapGrowth = probe.idleHeap.Load() - before
		out.idle = probe.idle.Load()
	} else {
		out.res = res
	}
	return out, nil
}
