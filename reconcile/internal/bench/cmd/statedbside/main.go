// Command statedbside runs cilium/statedb's reconciler benchmark
// (reconciler/benchmark/main.go in github.com/cilium/statedb v0.9.5) on
// statedb and on converge side by side, in one process, and prints each
// run and the median of each implementation, then converge's medians
// divided by statedb's. With -roundtrip it measures one object's round
// trip instead (bench.RoundTripImpls): percentiles of -trials round trips
// over a table of -objects converged objects, each implementation's runs
// interleaved, then converge's medians divided by statedb's.
//
//	go run ./cmd/statedbside -objects 100000,1000000 -runs 3
//	go run ./cmd/statedbside -roundtrip -objects 10000,100000 -trials 2000 -runs 3
package main

import (
	"flag"
	"fmt"
	"log"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/converge-go/converge/reconcile/internal/bench"
)

func main() {
	sizes := flag.String("objects", "", "comma-separated object counts (default 100000, or 10000 with -roundtrip)")
	runs := flag.Int("runs", 3, "runs of each implementation at each size (interleaved)")
	only := flag.String("impls", "", "comma-separated implementations to run (default all)")
	profiles := flag.String("heapprofiles", "", "if set, the last run of every implementation and size writes a heap profile, taken once it has converged, to this directory as heap-IMPL-OBJECTS.pprof")
	roundTrip := flag.Bool("roundtrip", false, "measure one object's round trip (write, reconciled, status seen) instead of the workload")
	trials := flag.Int("trials", 2000, "round trips measured in each run (with -roundtrip)")
	cpuProfiles := flag.String("cpuprofiles", "", "with -roundtrip, if set, the last run of every implementation and size writes a CPU profile of its trials to this directory as cpu-IMPL-OBJECTS.pprof")
	flag.Parse()
	if *sizes == "" {
		*sizes = "100000"
		if *roundTrip {
			*sizes = "10000"
		}
	}
	for _, f := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(f)
		if err != nil {
			log.Fatalf("-objects: %v", err)
		}
		if *roundTrip {
			runRoundTrip(n, *trials, *runs, *only, *cpuProfiles)
			continue
		}
		runSize(n, *runs, *only, *profiles)
	}
}

// chosen keeps the implementations named in only (all if only is empty).
func chosen[I any](impls []I, only string, name func(I) string) []I {
	if only == "" {
		return impls
	}
	return slices.DeleteFunc(impls, func(i I) bool {
		return !slices.Contains(strings.Split(only, ","), name(i))
	})
}

func runSize(n, runs int, only, profiles string) {
	impls := chosen(bench.SideImpls(), only, func(i bench.SideImpl) string { return i.Name })
	all := make(map[string][]bench.SideResult)
	fmt.Println(bench.SideHeader)
	for run := range runs {
		for _, impl := range impls {
			o := bench.SideOptions{Objects: n}
			if profiles != "" && run == runs-1 {
				o.HeapProfile = filepath.Join(profiles, fmt.Sprintf("heap-%s-%d.pprof", impl.Name, n))
			}
			res, err := impl.Run(o)
			if err != nil {
				log.Fatalf("%s: %v", impl.Name, err)
			}
			fmt.Println(res)
			all[impl.Name] = append(all[impl.Name], res)
		}
	}
	fmt.Printf("\nmedians of %d runs, %d objects\n%s\n", runs, n, bench.SideHeader)
	med := make(map[string]bench.SideResult)
	for _, impl := range impls {
		med[impl.Name] = median(all[impl.Name])
		fmt.Println(med[impl.Name])
	}
	base, ok := med["statedb"]
	if !ok {
		return
	}
	fmt.Printf("\n÷ statedb                        converged    CPU/obj  alloc/obj  peak heap heap after\n")
	for _, impl := range impls[1:] {
		r := med[impl.Name]
		fmt.Printf("%-30s %8.2fx %9.2fx %9.2fx %9.2fx %9.2fx\n", r.Name,
			ratio(float64(r.Converged), float64(base.Converged)), ratio(float64(r.CPU), float64(base.CPU)),
			ratio(float64(r.Alloc), float64(base.Alloc)), ratio(float64(r.PeakHeap), float64(base.PeakHeap)),
			ratio(float64(r.HeapAfter), float64(base.HeapAfter)))
	}
	fmt.Println()
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// middle returns the median of the figure f of rs.
func middle[R any](rs []R, f func(R) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

// median takes the median of each figure on its own.
func median(rs []bench.SideResult) bench.SideResult {
	pick := func(f func(bench.SideResult) float64) float64 { return middle(rs, f) }
	m := rs[0]
	m.Converged = time.Duration(pick(func(r bench.SideResult) float64 { return float64(r.Converged) }))
	m.CPU = time.Duration(pick(func(r bench.SideResult) float64 { return float64(r.CPU) }))
	m.Alloc = uint64(pick(func(r bench.SideResult) float64 { return float64(r.Alloc) }))
	m.PeakHeap = uint64(pick(func(r bench.SideResult) float64 { return float64(r.PeakHeap) }))
	m.HeapAfter = uint64(pick(func(r bench.SideResult) float64 { return float64(r.HeapAfter) }))
	m.Relists = int64(pick(func(r bench.SideResult) float64 { return float64(r.Relists) }))
	return m
}
