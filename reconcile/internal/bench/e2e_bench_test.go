package bench

import (
	"context"
	"flag"
	"runtime"
	"testing"
	"time"

	"github.com/converge-go/converge/internal/cputime"
	"github.com/converge-go/converge/store"
)

var (
	e2eObjects = flag.Int("e2e.objects", 100_000, "objects in the store of the end-to-end benchmark")
	e2eWorkers = flag.Int("e2e.workers", 8, "workers of every end-to-end implementation")
	e2eHistory = flag.Int("e2e.history", 0, "if positive, the memory store keeps this many revisions of history and lets watchers lag half as many (default: the store's defaults)")
)

// e2eStoreOptions returns the memory store options -e2e.history selects.
func e2eStoreOptions() []store.MemoryOption {
	if *e2eHistory <= 0 {
		return nil
	}
	return []store.MemoryOption{store.WithHistory(*e2eHistory), store.WithWatchLag(*e2eHistory / 2)}
}

// storeOnlyTime is the mean Settled time of the latest store-only run of
// BenchmarkE2E, which the frameworks' overhead is computed against.
var storeOnlyTime time.Duration

// e2eRun makes a fresh memory store holding keys, collects garbage, and
// runs impl over it, with the benchmark timer running during the run only
// if timed; it fails b unless every object converged. The timer is
// stopped on return.
func e2eRun(b *testing.B, impl E2EImpl, keys []string, timed bool) E2EResult {
	b.StopTimer()
	ctx := context.Background()
	s := store.NewMemory[*Pair](e2eStoreOptions()...)
	defer s.Close()
	if err := Populate(ctx, s, keys); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	if timed {
		b.StartTimer()
	}
	cpu0 := cputime.Process()
	r, err := impl.Run(s, keys, *e2eWorkers)
	r.CPU = cputime.Process() - cpu0
	b.StopTimer()
	if err != nil {
		b.Fatalf("%s: %v", impl.Name, err)
	}
	if r.Writes != int64(len(keys)) {
		b.Fatalf("%s: %d status writes, want %d", impl.Name, r.Writes, len(keys))
	}
	if err := CheckConverged(ctx, s, keys); err != nil {
		b.Fatalf("%s: %v", impl.Name, err)
	}
	return r
}

// BenchmarkE2E runs the end-to-end workload (every object of a store needs
// one status write) over each implementation; one op is one whole run.
// The store-only baseline runs first so that the frameworks' overhead can
// be computed against it; a framework benchmarked alone measures the
// baseline once itself (untimed).
func BenchmarkE2E(b *testing.B) {
	keys := NewKeys(*e2eObjects)
	for _, impl := range E2EImpls() {
		b.Run(impl.Name, func(b *testing.B) {
			b.ReportAllocs()
			var converged, settled time.Duration
			var reconciles, lists, watches int64
			var mallocs uint64
			var cpu, first time.Duration
			for range b.N {
				r := e2eRun(b, impl, keys, true)
				converged += r.Converged
				settled += r.Settled
				reconciles += r.Reconciles
				mallocs += r.Mallocs
				lists += r.Lists
				watches += r.Watches
				cpu += r.CPU
				first += r.First
			}
			n := float64(b.N)
			msPerOp(b, converged, "converge-ms")
			msPerOp(b, settled, "settle-ms")
			msPerOp(b, cpu, "cpu-ms")
			msPerOp(b, first, "first-ms")
			b.ReportMetric(float64(reconciles)/n, "reconciles/op")
			b.ReportMetric(float64(reconciles)/settled.Seconds(), "reconciles/s")
			b.ReportMetric(float64(mallocs)/float64(reconciles), "allocs/reconcile")
			if impl.Name == "store-only" {
				storeOnlyTime = settled / time.Duration(b.N)
				return
			}
			if storeOnlyTime == 0 {
				storeOnlyTime = e2eRun(b, E2EImpls()[0], keys, false).Settled
			}
			over := float64(settled/time.Duration(b.N)-storeOnlyTime) / float64(time.Microsecond)
			b.ReportMetric(over/(float64(reconciles)/n), "overhead-us/reconcile")
			b.ReportMetric(over/float64(len(keys)), "overhead-us/object")
			b.ReportMetric(float64(lists)/n, "lists/op")
			b.ReportMetric(float64(watches)/n, "watches/op")
		})
	}
}
