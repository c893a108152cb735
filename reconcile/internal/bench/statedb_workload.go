package bench

import (
	"cmp"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"
)

// The statedb workload is cilium/statedb's own reconciler benchmark
// (reconciler/benchmark/main.go in github.com/cilium/statedb v0.9.5),
// ported so that converge and statedb do the same job in one process:
// Objects objects, each with a status, are inserted as pending in
// transactions of Insert while the reconciler runs; the reconciler runs a
// mock operation on each (it counts, nothing more) and records its status
// as done. A run ends when every object's status is done.
//
// statedb runs as in its benchmark: a hive with statedb, jobs and the
// reconciler registered with round limits of Round objects and
// rate.NewLimiter(1000, 10). converge runs the idiomatic way: the objects
// in a store.Memory, reconcile.New with its default options, the status
// written back through Request.Store.

// SideOptions sizes one run of the statedb workload.
type SideOptions struct {
	// Objects is how many objects are inserted (statedb's -objects).
	Objects int
	// Insert is how many objects one insert transaction holds
	// (statedb's -batchsize, default 1000).
	Insert int
	// Round bounds the objects of one reconciliation round
	// (statedb's -incrbatchsize, default 1000); for converge it is the
	// BatchSize of a BatchReconciler.
	Round int
	// History sizes the converge store's change history
	// (store.WithHistory; 0 keeps the default).
	History int
	// Batch makes converge's reconciler a BatchReconciler with BatchSize
	// Round.
	Batch bool
	// BatchWrites makes converge's inserts and, with Batch, its status
	// writes store.WriteBatch calls of Insert (or Round) writes.
	BatchWrites bool
	// CatchUp makes the store's watch store.WatchCatchingUp's: a
	// watch that falls behind catches up by difference, not by a re-list.
	// The controller's cache watches so itself over the memory store (a
	// store.Differ), so this wraps that watch twice; it is kept to compare
	// with the figures of the runs before.
	CatchUp bool
	// HeapProfile, if set, names a file to which the heap profile is
	// written once the run has converged, after the GC that measures
	// HeapAfter.
	HeapProfile string
}

func (o SideOptions) withDefaults() SideOptions {
	if o.Insert <= 0 {
		o.Insert = 1000
	}
	if o.Round <= 0 {
		o.Round = 1000
	}
	return o
}

// SideResult is what one run of the statedb workload measured.
type SideResult struct {
	Name    string
	Objects int
	// Converged is the time from the first insert until every object's
	// status is done.
	Converged time.Duration
	// CPU is the process's user and system time over the same span.
	CPU time.Duration
	// Alloc is the bytes allocated from the start of the run (before the
	// reconciler starts) to convergence.
	Alloc uint64
	// PeakHeap is the largest heap (live and not yet collected objects)
	// sampled every millisecond during the run, less the heap at its start.
	PeakHeap uint64
	// HeapAfter is the heap in use after convergence and a GC, with the
	// reconciler still running, less the heap at the start.
	HeapAfter uint64
	// Relists counts the lists of the store beyond the first (converge
	// only: its cache lists once, and again each time its watch cannot
	// resume).
	Relists int64
}

// PerObject returns a per-object figure of v.
func (r SideResult) PerObject(v float64) float64 { return v / float64(r.Objects) }

// String formats r as one line of the side-by-side table.
func (r SideResult) String() string {
	return fmt.Sprintf("%-30s %9d %10.3fs %9.0fns %9.0fB %8.1fMB %8.1fMB %7d",
		r.Name, r.Objects, r.Converged.Seconds(),
		r.PerObject(float64(r.CPU.Nanoseconds())), r.PerObject(float64(r.Alloc)),
		float64(r.PeakHeap)/(1<<20), float64(r.HeapAfter)/(1<<20), r.Relists)
}

// SideHeader names the columns of SideResult.String.
const SideHeader = "implementation                   objects  converged    CPU/obj  alloc/obj  peak heap heap after relists"

// sideRun is one implementation's part of a run: it starts its
// reconciler, inserts the objects, calls converging once the inserts begin
// and settled once every status is done (with the reconciler still
// running), then stops. It returns the re-lists it counted.
type sideRun func(o SideOptions, converging, settled func()) (relists int64, err error)

// measure runs run and measures it.
func measure(name string, o SideOptions, run sideRun) (SideResult, error) {
	res := SideResult{Name: name, Objects: o.Objects}
	var profErr error
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	peak := startPeak()
	var start time.Time
	var cpu0 time.Duration
	converging := func() { start, cpu0 = time.Now(), cpuTime() }
	settled := func() {
		res.Converged = time.Since(start)
		res.CPU = cpuTime() - cpu0
		res.PeakHeap = sub(peak.stop(), before.HeapAlloc)
		runtime.GC()
		runtime.ReadMemStats(&after)
		res.Alloc = after.TotalAlloc - before.TotalAlloc
		res.HeapAfter = sub(after.HeapAlloc, before.HeapAlloc)
		if o.HeapProfile != "" {
			profErr = writeHeapProfile(o.HeapProfile)
		}
	}
	relists, err := run(o.withDefaults(), converging, settled)
	res.Relists = relists
	return res, cmp.Or(err, profErr)
}

// writeHeapProfile writes the heap profile (of the last GC) to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func sub(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}

// cpuTime returns the process's user and system time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakSampler samples the heap every millisecond and keeps the largest.
type peakSampler struct {
	quit chan struct{}
	wg   sync.WaitGroup
	peak uint64
}

func startPeak() *peakSampler {
	p := &peakSampler{quit: make(chan struct{})}
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	p.wg.Go(func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			p.peak = max(p.peak, sample[0].Value.Uint64())
			select {
			case <-tick.C:
			case <-p.quit:
				return
			}
		}
	})
	return p
}

// stop ends the sampling and returns the peak.
func (p *peakSampler) stop() uint64 {
	close(p.quit)
	p.wg.Wait()
	return p.peak
}

// SideImpl is one implementation of the statedb workload.
type SideImpl struct {
	Name string
	Run  func(o SideOptions) (SideResult, error)
}

// SideImpls returns statedb, then converge the idiomatic way (default
// options, one Update per status), with a BatchReconciler (BatchSize
// Round), with a history sized for the whole burst (no re-list), and with
// a BatchReconciler whose inserts and status writes are store.WriteBatch
// calls, and the idiomatic way and with batched writes again with the
// controller's watch catching up by difference (store.WatchCatchingUp)
// instead of re-listing.
func SideImpls() []SideImpl {
	convergeWith := func(name string, set func(*SideOptions)) SideImpl {
		return SideImpl{Name: name, Run: func(o SideOptions) (SideResult, error) {
			set(&o)
			return RunConvergeStatedb(name, o)
		}}
	}
	return []SideImpl{
		{Name: "statedb", Run: RunStatedb},
		convergeWith("converge", func(*SideOptions) {}),
		convergeWith("converge-batch", func(o *SideOptions) { o.Batch = true }),
		convergeWith("converge-history", func(o *SideOptions) { o.History = 2 * (o.Objects + 1) }),
		convergeWith("converge-batch-writes", func(o *SideOptions) { o.Batch, o.BatchWrites = true, true }),
		convergeWith("converge-catchup", func(o *SideOptions) { o.CatchUp = true }),
		convergeWith("converge-catchup-batch-writes", func(o *SideOptions) { o.Batch, o.BatchWrites, o.CatchUp = true, true, true }),
	}
}
