// Command httpload runs the store load benchmark of reconcile/internal/bench side by
// side over several targets in one process and prints a Markdown table of
// medians: for every client count, every target (bench.LoadTargets: the
// HTTP store over bolt, etcdstore over an embedded etcd, and for context
// etcd with fsync, HTTP over bolt on tmpfs, HTTP over memory and bolt
// called directly) runs -runs times, interleaved (run 1 of every
// configuration, then run 2, ...), each over a fresh store.
//
// Each run: -clients goroutines do read-modify-write compare-and-swap
// updates (Get, then Update at the revision read; a conflict is counted and
// retried after a new Get) on -keys keys chosen uniformly, for -duration,
// while -watchers watches of the whole prefix record every event. A run
// fails unless every watcher delivered every successful write's revision
// exactly once, in order. Progress goes to standard error, the table to
// standard output; the exit status is 1 if any run failed.
//
//	go run ./cmd/httpload                         # 3 runs × {8, 64} clients × 6 targets, 10 s each
//	go run ./cmd/httpload -targets http-bolt,etcd -clients 8 -runs 1 -duration 2s
//	go run ./cmd/httpload -targets http-bolt -clients 8 -runs 1 -cpuprofile cpu.out
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/converge-go/converge/internal/cputime"
	"github.com/converge-go/converge/reconcile/internal/bench"
)

func main() {
	var names []string
	for _, t := range bench.LoadTargets() {
		names = append(names, t.Name)
	}
	targets := flag.String("targets", strings.Join(names, ","), "comma-separated targets")
	clients := flag.String("clients", "8,64", "comma-separated client counts")
	watchers := flag.Int("watchers", 4, "watchers of the whole prefix during each run")
	keys := flag.Int("keys", 1000, "keys the clients update, chosen uniformly")
	duration := flag.Duration("duration", 10*time.Second, "length of each run")
	runs := flag.Int("runs", 3, "runs of every configuration; the table shows medians")
	settle := flag.Duration("settle", time.Minute, "how long watchers may take after the last write to deliver it")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of all the runs to this file")
	flag.Parse()
	if err := run(os.Stdout, os.Stderr, *targets, *clients, *watchers, *keys, *duration, *runs, *settle, *cpuprofile); err != nil {
		fmt.Fprintln(os.Stderr, "httpload:", err)
		os.Exit(1)
	}
}

// sample is one run's figures.
type sample struct {
	cas, conflicts, p50, p99, p999, rmw99 float64
	// cpuPerCAS is the process's CPU time (user and system, every
	// goroutine: clients, watchers, server, store) per successful write, in
	// µs: unlike CAS/s, it hardly depends on what else the machine runs.
	cpuPerCAS float64
	events    int
	resumes   int64
}

func run(out, log io.Writer, targetList, clientList string, watchers, keys int, duration time.Duration, runs int, settle time.Duration, cpuprofile string) error {
	var targets []bench.LoadTarget
	for _, name := range strings.Split(targetList, ",") {
		t, err := bench.LoadTargetByName(strings.TrimSpace(name))
		if err != nil {
			return err
		}
		targets = append(targets, t)
	}
	var counts []int
	for _, f := range strings.Split(clientList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("bad client count %q", f)
		}
		counts = append(counts, n)
	}
	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	fmt.Fprintf(log, "# %d runs of %v each, clients %s, %d watchers, %d keys, targets %s\n", runs, duration, clientList, watchers, keys, targetList)
	samples := map[string][]sample{} // "clients/target"
	failed := 0
	for r := range runs {
		for _, n := range counts {
			for _, t := range targets {
				cfg := bench.LoadConfig{Clients: n, Watchers: watchers, Keys: keys, Duration: duration, Settle: settle, Seed: uint64(r + 1)}
				s, err := once(t, cfg)
				id := fmt.Sprintf("%d/%s", n, t.Name)
				if err != nil {
					failed++
					fmt.Fprintf(log, "run %d %-12s clients=%-3d FAILED: %v\n", r+1, t.Name, n, err)
					continue
				}
				samples[id] = append(samples[id], s)
				fmt.Fprintf(log, "run %d %-12s clients=%-3d %8.0f CAS/s  %6.0f conflicts/s  p50 %.2f ms  p99 %.2f ms  p999 %.2f ms  rmw p99 %.2f ms  cpu %.0f µs/CAS  events/watcher %d  resumes %d\n",
					r+1, t.Name, n, s.cas, s.conflicts, s.p50, s.p99, s.p999, s.rmw99, s.cpuPerCAS, s.events, s.resumes)
			}
		}
	}
	writeTable(out, targets, counts, samples)
	if failed > 0 {
		return fmt.Errorf("%d runs failed", failed)
	}
	return nil
}

// once runs cfg over a fresh instance of t in a temporary directory.
func once(t bench.LoadTarget, cfg bench.LoadConfig) (sample, error) {
	dir, err := os.MkdirTemp("", "httpload-")
	if err != nil {
		return sample{}, err
	}
	defer os.RemoveAll(dir)
	st, stop, err := t.Open(dir)
	if err != nil {
		return sample{}, err
	}
	runtime.GC()
	cpu0 := cputime.Process()
	res, err := bench.RunLoad(context.Background(), st, cfg)
	cpu := cputime.Process() - cpu0
	if serr := stop(); err == nil && serr != nil {
		err = fmt.Errorf("stop: %w", serr)
	}
	if err != nil {
		return sample{}, err
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	s := sample{
		cas:       res.CASPerSecond(),
		conflicts: float64(res.Conflicts) / res.Elapsed.Seconds(),
		p50:       ms(bench.Quantile(res.CAS, 0.50)),
		p99:       ms(bench.Quantile(res.CAS, 0.99)),
		p999:      ms(bench.Quantile(res.CAS, 0.999)),
		rmw99:     ms(bench.Quantile(res.RMW, 0.99)),
		resumes:   res.Resumes,
	}
	if res.Writes > 0 {
		s.cpuPerCAS = float64(cpu) / float64(time.Microsecond) / float64(res.Writes)
	}
	if len(res.Events) > 0 {
		s.events = res.Events[0]
	}
	return s, nil
}

// median returns the median of the field f picks out of ss.
func median(ss []sample, f func(sample) float64) float64 {
	vs := make([]float64, len(ss))
	for i, s := range ss {
		vs[i] = f(s)
	}
	slices.Sort(vs)
	return vs[len(vs)/2]
}

func writeTable(out io.Writer, targets []bench.LoadTarget, counts []int, samples map[string][]sample) {
	fmt.Fprintln(out, "| clients | target | CAS/s | conflicts/s | CAS p50 ms | CAS p99 ms | CAS p999 ms | read-modify-write p99 ms | CPU µs per CAS | events per watcher | watch resumes | runs |")
	fmt.Fprintln(out, "|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, n := range counts {
		for _, t := range targets {
			ss := samples[fmt.Sprintf("%d/%s", n, t.Name)]
			if len(ss) == 0 {
				fmt.Fprintf(out, "| %d | %s | failed | | | | | | | | | 0 |\n", n, t.Name)
				continue
			}
			fmt.Fprintf(out, "| %d | %s | %.0f | %.0f | %.2f | %.2f | %.2f | %.2f | %.0f | %.0f | %.0f | %d |\n", n, t.Name,
				median(ss, func(s sample) float64 { return s.cas }),
				median(ss, func(s sample) float64 { return s.conflicts }),
				median(ss, func(s sample) float64 { return s.p50 }),
				median(ss, func(s sample) float64 { return s.p99 }),
				median(ss, func(s sample) float64 { return s.p999 }),
				median(ss, func(s sample) float64 { return s.rmw99 }),
				median(ss, func(s sample) float64 { return s.cpuPerCAS }),
				median(ss, func(s sample) float64 { return float64(s.events) }),
				median(ss, func(s sample) float64 { return float64(s.resumes) }),
				len(ss))
		}
	}
	fmt.Fprintln(out)
	for _, n := range counts {
		h, e := samples[fmt.Sprintf("%d/http-bolt", n)], samples[fmt.Sprintf("%d/etcd", n)]
		if len(h) == 0 || len(e) == 0 {
			continue
		}
		cas := func(s sample) float64 { return s.cas }
		fmt.Fprintf(out, "%d clients: http-bolt ÷ etcd CAS/s = %.2f×; http-bolt CAS p99 %.2f ms\n", n, median(h, cas)/median(e, cas), median(h, func(s sample) float64 { return s.p99 }))
	}
}
