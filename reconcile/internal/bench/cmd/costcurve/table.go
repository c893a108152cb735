package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"
	"unsafe"

	"github.com/converge-go/converge/reconcile/internal/bench"
	"github.com/converge-go/converge/store"
)

// cachedObjectBytes is the size of the cached object itself: the
// store.Object[*Pair] a cache keeps per key. Its Key bytes and its *Pair are
// shared with the memory store (which hands out the values it holds), so
// they are not counted again.
const cachedObjectBytes = int64(unsafe.Sizeof(store.Object[*bench.Pair]{}))

// row is the summary of every run of one implementation at one store size.
// Times, reconciles and allocations are medians over the timed runs, heap
// growth the median over the memory runs; derived columns are computed
// from those medians.
type row struct {
	impl    string
	objects int
	runs    int

	settle, settleMin, settleMax, converge time.Duration
	reconciles                             int64
	mallocs                                uint64
	heapGrowth, idleHeapGrowth             int64
	// idle says whether every memory run went idle within idleLimit.
	idle bool

	// Against the store-only row of the same size.
	baseSettle  time.Duration
	baseMallocs uint64
	baseHeap    int64
	baseIdle    int64
}

func (r row) perObject(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(r.objects) }

// nsPerObject is the settle time divided by the objects.
func (r row) nsPerObject() float64 { return r.perObject(r.settle) }

// overheadNsPerObject is the settle time beyond store-only's, per object.
func (r row) overheadNsPerObject() float64 { return r.perObject(r.settle - r.baseSettle) }

func (r row) allocsPerReconcile() float64 { return float64(r.mallocs) / float64(r.reconciles) }

// frameworkAllocsPerReconcile is the allocations beyond store-only's (which
// makes the same status writes), per reconcile.
func (r row) frameworkAllocsPerReconcile() float64 {
	return (float64(r.mallocs) - float64(r.baseMallocs)) / float64(r.reconciles)
}

// frameworkBytesPerObject is the heap growth beyond store-only's, per
// object: everything the implementation keeps, its cache included.
func (r row) frameworkBytesPerObject() float64 {
	return float64(r.heapGrowth-r.baseHeap) / float64(r.objects)
}

// beyondCachedBytesPerObject is frameworkBytesPerObject less the cached
// object itself (cachedObjectBytes).
func (r row) beyondCachedBytesPerObject() float64 {
	return r.frameworkBytesPerObject() - float64(cachedObjectBytes)
}

// idleFrameworkBytesPerObject is frameworkBytesPerObject measured once
// the process had gone idle.
func (r row) idleFrameworkBytesPerObject() float64 {
	return float64(r.idleHeapGrowth-r.baseIdle) / float64(r.objects)
}

// idleBeyondCachedBytesPerObject is idleFrameworkBytesPerObject less the
// cached object itself: what issue 15's memory target bounds.
func (r row) idleBeyondCachedBytesPerObject() float64 {
	return r.idleFrameworkBytesPerObject() - float64(cachedObjectBytes)
}

func median[T int64 | uint64 | time.Duration](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// summarize turns samples into one row per size and implementation, in the
// order of sizes and impls.
func summarize(samples []sample, sizes []int, impls []string) []row {
	var rows []row
	for _, n := range sizes {
		var base row
		for _, impl := range impls {
			var settles, converges []time.Duration
			var recs, heaps, idleHeaps []int64
			idle := true
			var mallocs []uint64
			for _, s := range samples {
				switch {
				case s.impl != impl || s.objects != n:
				case s.memory:
					heaps = append(heaps, s.heapGrowth)
					idleHeaps = append(idleHeaps, s.idleHeapGrowth)
					idle = idle && s.idle
				default:
					settles = append(settles, s.res.Settled)
					converges = append(converges, s.res.Converged)
					recs = append(recs, s.res.Reconciles)
					mallocs = append(mallocs, s.res.Mallocs)
				}
			}
			if len(settles) == 0 {
				continue
			}
			r := row{
				impl: impl, objects: n, runs: len(settles),
				settle: median(settles), settleMin: slices.Min(settles), settleMax: slices.Max(settles),
				converge: median(converges), reconciles: median(recs), mallocs: median(mallocs),
				heapGrowth: median(heaps), idleHeapGrowth: median(idleHeaps), idle: idle,
			}
			if impl == storeOnly {
				base = r
			}
			r.baseSettle, r.baseMallocs, r.baseHeap, r.baseIdle = base.settle, base.mallocs, base.heapGrowth, base.idleHeapGrowth
			rows = append(rows, r)
		}
	}
	return rows
}

var csvHeader = []string{
	"objects", "impl", "runs", "settle_ms", "settle_ms_min", "settle_ms_max", "converge_ms",
	"ns_per_object", "overhead_ns_per_object", "reconciles_per_object",
	"allocs_per_reconcile", "framework_allocs_per_reconcile",
	"heap_growth_bytes_per_object", "framework_bytes_per_object", "beyond_cached_bytes_per_object",
	"idle", "idle_heap_growth_bytes_per_object", "idle_framework_bytes_per_object", "idle_beyond_cached_bytes_per_object",
}

func ms(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 1, 64) }

func f(x float64, prec int) string { return strconv.FormatFloat(x, 'f', prec, 64) }

// writeCSV writes rows as CSV with csvHeader.
func writeCSV(w io.Writer, rows []row) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	for _, r := range rows {
		if err := cw.Write([]string{
			strconv.Itoa(r.objects), r.impl, strconv.Itoa(r.runs),
			ms(r.settle), ms(r.settleMin), ms(r.settleMax), ms(r.converge),
			f(r.nsPerObject(), 0), f(r.overheadNsPerObject(), 0),
			f(float64(r.reconciles)/float64(r.objects), 2),
			f(r.allocsPerReconcile(), 2), f(r.frameworkAllocsPerReconcile(), 2),
			f(float64(r.heapGrowth)/float64(r.objects), 0),
			f(r.frameworkBytesPerObject(), 0), f(r.beyondCachedBytesPerObject(), 0),
			strconv.FormatBool(r.idle), f(float64(r.idleHeapGrowth)/float64(r.objects), 0),
			f(r.idleFrameworkBytesPerObject(), 0), f(r.idleBeyondCachedBytesPerObject(), 0),
		}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// writeMarkdown writes rows as a Markdown table.
func writeMarkdown(w io.Writer, rows []row) error {
	if _, err := fmt.Fprintln(w, "| objects | impl | settle ms (min–max) | ns/object | overhead ns/object | reconciles/object | allocs/reconcile | framework allocs/reconcile | framework B/object at last write | beyond cached object | framework B/object idle | beyond cached object |\n|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"); err != nil {
		return err
	}
	for _, r := range rows {
		idleMark := ""
		if !r.idle {
			idleMark = " (not idle)"
		}
		if _, err := fmt.Fprintf(w, "| %d | %s | %s (%s–%s) | %s | %s | %s | %s | %s | %s | %s | %s%s | %s |\n",
			r.objects, r.impl, ms(r.settle), ms(r.settleMin), ms(r.settleMax),
			f(r.nsPerObject(), 0), f(r.overheadNsPerObject(), 0),
			f(float64(r.reconciles)/float64(r.objects), 2),
			f(r.allocsPerReconcile(), 2), f(r.frameworkAllocsPerReconcile(), 2),
			f(r.frameworkBytesPerObject(), 0), f(r.beyondCachedBytesPerObject(), 0),
			f(r.idleFrameworkBytesPerObject(), 0), idleMark, f(r.idleBeyondCachedBytesPerObject(), 0)); err != nil {
			return err
		}
	}
	return nil
}
