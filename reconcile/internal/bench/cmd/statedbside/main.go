// Command statedbside runs cilium/statedb's reconciler benchmark
// (reconciler/benchmark/main.go in github.com/cilium/statedb v0.9.5) on
// statedb and on converge side by side, in one process, and prints each
// run and the median of each implementation, then converge's medians
// divided by statedb's.
//
//	go run ./cmd/statedbside -objects 100000,1000000 -runs 3
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
	sizes := flag.String("objects", "100000", "comma-separated object counts")
	runs := flag.Int("runs", 3, "runs of each implementation at each size (interleaved)")
	only := flag.String("impls", "", "comma-separated implementations to run (default all)")
	profiles := flag.String("heapprofiles", "", "if set, the last run of every implementation and size writes a heap profile, taken once it has converged, to this directory as heap-IMPL-OBJECTS.pprof")
	flag.Parse()
	for _, f := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(f)
		if err != nil {
			log.Fatalf("-objects: %v", err)
		}
		runSize(n, *runs, *only, *profiles)
	}
}

func runSize(n, runs int, only, profiles string) {
	impls := bench.SideImpls()
	if only != "" {
		impls = slices.DeleteFunc(impls, func(i bench.SideImpl) bool {
			return !slices.Contains(strings.Split(only, ","), i.Name)
		})
	}
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

// median takes the median of each figure on its own.
func median(rs []bench.SideResult) bench.SideResult {
	pick := func(f func(bench.SideResult) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	m := rs[0]
	m.Converged = time.Duration(pick(func(r bench.SideResult) float64 { return float64(r.Converged) }))
	m.CPU = time.Duration(pick(func(r bench.SideResult) float64 { return float64(r.CPU) }))
	m.Alloc = uint64(pick(func(r bench.SideResult) float64 { return float64(r.Alloc) }))
	m.PeakHeap = uint64(pick(func(r bench.SideResult) float64 { return float64(r.PeakHeap) }))
	m.HeapAfter = uint64(pick(func(r bench.SideResult) float64 { return float64(r.HeapAfter) }))
	m.Relists = int64(pick(func(r bench.SideResult) float64 { return float64(r.Relists) }))
	return m
}
