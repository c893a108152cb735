package main

import (
	"fmt"
	"log"
	"path/filepath"
	"time"

	"github.com/converge-go/converge/reconcile/internal/bench"
)

// runRoundTrip runs every chosen round-trip implementation runs times over
// n objects, interleaved, and prints each run, the medians of each
// percentile over the runs, and converge's medians divided by statedb's.
func runRoundTrip(n, trials, runs int, only, profiles string) {
	impls := chosen(bench.RoundTripImpls(), only, func(i bench.RoundTripImpl) string { return i.Name })
	all := make(map[string][]bench.RoundTripResult)
	fmt.Println(bench.RoundTripHeader)
	for run := range runs {
		for _, impl := range impls {
			o := bench.RoundTripOptions{Objects: n, Trials: trials}
			if profiles != "" && run == runs-1 {
				o.CPUProfile = filepath.Join(profiles, fmt.Sprintf("cpu-%s-%d.pprof", impl.Name, n))
			}
			res, err := impl.Run(o)
			if err != nil {
				log.Fatalf("%s: %v", impl.Name, err)
			}
			fmt.Println(res)
			all[impl.Name] = append(all[impl.Name], res)
		}
	}
	fmt.Printf("\nmedians of %d runs, %d objects, %d trials each\n%s\n", runs, n, trials, bench.RoundTripHeader)
	med := make(map[string]bench.RoundTripResult)
	for _, impl := range impls {
		med[impl.Name] = roundTripMedian(all[impl.Name])
		fmt.Println(med[impl.Name])
	}
	base, ok := med["statedb"]
	if !ok {
		return
	}
	fmt.Printf("\n÷ statedb              p50        p99       p999\n")
	for _, impl := range impls {
		if impl.Name == "statedb" {
			continue
		}
		r := med[impl.Name]
		fmt.Printf("%-16s %9.2fx %9.2fx %9.2fx\n", r.Name,
			ratio(float64(r.P50), float64(base.P50)), ratio(float64(r.P99), float64(base.P99)),
			ratio(float64(r.P999), float64(base.P999)))
	}
	fmt.Println()
}

// roundTripMedian takes the median of each percentile on its own.
func roundTripMedian(rs []bench.RoundTripResult) bench.RoundTripResult {
	pick := func(f func(bench.RoundTripResult) time.Duration) time.Duration {
		return time.Duration(middle(rs, func(r bench.RoundTripResult) float64 { return float64(f(r)) }))
	}
	m := rs[0]
	m.P50 = pick(func(r bench.RoundTripResult) time.Duration { return r.P50 })
	m.P99 = pick(func(r bench.RoundTripResult) time.Duration { return r.P99 })
	m.P999 = pick(func(r bench.RoundTripResult) time.Duration { return r.P999 })
	m.Max = pick(func(r bench.RoundTripResult) time.Duration { return r.Max })
	return m
}
