// Command costcurve measures how the end-to-end controller workload of
// package bench costs per object as the store grows: for every size it
// runs each implementation (store-only, converge, client-go, ctrl-runtime)
// over a fresh memory store of that many objects, interleaved, and records
// the time to settle, the time and allocations per object and per
// reconcile, and the heap each implementation keeps per object beyond the
// store-only baseline. It writes the medians as CSV (-csv), a two-panel
// PNG plot against object count on a log axis (-png), and a Markdown
// table on standard output; every run is logged on standard error.
//
// Usage, from reconcile/internal/bench:
//
//	go run ./cmd/costcurve                                   # 10k, 100k, 1M objects; 3 timed runs and 1 memory run each
//	go run ./cmd/costcurve -sizes 1000,10000 -runs 1 -csv /tmp/c.csv -png /tmp/c.png
//	go run ./cmd/costcurve -history 2000000 -csv costcurve_history.csv -png costcurve_history.png
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"

	"github.com/converge-go/converge/reconcile/internal/bench"
	"github.com/converge-go/converge/store"
)

// storeOnly names the baseline implementation, which every other is
// measured against.
const storeOnly = "store-only"

// config is what the flags select.
type config struct {
	sizes            []int
	runs, memoryRuns int
	workers          int
	csvPath, pngPath string
	heapProfiles     string
	history          int
}

// storeOptions returns the memory store options -history selects.
func (c config) storeOptions() []store.MemoryOption {
	if c.history <= 0 {
		return nil
	}
	return []store.MemoryOption{store.WithHistory(c.history), store.WithWatchLag(c.history / 2)}
}

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "costcurve:", err)
		os.Exit(1)
	}
}

// run parses args, measures, writes the CSV and PNG files, and prints the
// table to stdout and one line per run to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	impls := bench.E2EImpls()
	if impls[0].Name != storeOnly {
		return errors.New("the first end-to-end implementation is not the store-only baseline")
	}
	var names []string
	for _, impl := range impls {
		names = append(names, impl.Name)
	}
	var samples []sample
	var profileErr error
	for _, n := range cfg.sizes {
		keys := bench.NewKeys(n)
		// Timed runs: every implementation once per round, rounds
		// repeated, so that a slow stretch of the machine hits all.
		for round := range cfg.runs {
			for _, impl := range impls {
				if err := ctx.Err(); err != nil {
					return err
				}
				s, err := runOnce(impl, keys, cfg.storeOptions(), cfg.workers, false, nil)
				if err != nil {
					return err
				}
				fmt.Fprintf(stderr, "objects=%d impl=%s run=%d settle=%v converge=%v reconciles=%d mallocs=%d lists=%d watches=%d\n",
					n, impl.Name, round+1, s.res.Settled, s.res.Converged, s.res.Reconciles, s.res.Mallocs, s.res.Lists, s.res.Watches)
				samples = append(samples, s)
			}
		}
		for round := range cfg.memoryRuns {
			for _, impl := range impls {
				var profile func()
				if cfg.heapProfiles != "" && round == 0 {
					path := filepath.Join(cfg.heapProfiles, fmt.Sprintf("heap-%s-%d.pprof", impl.Name, n))
					profile = func() { profileErr = errors.Join(profileErr, writeHeapProfile(path)) }
				}
				s, err := runOnce(impl, keys, cfg.storeOptions(), cfg.workers, true, profile)
				if err != nil {
					return err
				}
				fmt.Fprintf(stderr, "objects=%d impl=%s memory-run=%d heap-growth=%d B (%.0f B/object) idle=%v idle-heap-growth=%d B (%.0f B/object)\n",
					n, impl.Name, round+1, s.heapGrowth, float64(s.heapGrowth)/float64(n), s.idle, s.idleHeapGrowth, float64(s.idleHeapGrowth)/float64(n))
				samples = append(samples, s)
			}
		}
	}
	if profileErr != nil {
		return profileErr
	}
	rows := summarize(samples, cfg.sizes, names)

	var csvBuf bytes.Buffer
	if err := writeCSV(&csvBuf, rows); err != nil {
		return err
	}
	if err := os.WriteFile(cfg.csvPath, csvBuf.Bytes(), 0o644); err != nil {
		return err
	}
	var pngBuf bytes.Buffer
	if err := plot(&pngBuf, rows, names); err != nil {
		return err
	}
	if err := os.WriteFile(cfg.pngPath, pngBuf.Bytes(), 0o644); err != nil {
		return err
	}
	return writeMarkdown(stdout, rows)
}

// writeHeapProfile writes the heap profile as of the last collection to
// path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("costcurve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sizes := fs.String("sizes", "10000,100000,1000000", "comma-separated store sizes (objects)")
	cfg := config{}
	fs.IntVar(&cfg.runs, "runs", 3, "timed runs of every implementation at every size")
	fs.IntVar(&cfg.memoryRuns, "memruns", 1, "memory runs (live heap probed at the last status write) of every implementation at every size")
	fs.IntVar(&cfg.workers, "workers", 8, "workers of every implementation")
	fs.StringVar(&cfg.csvPath, "csv", "costcurve.csv", "CSV output file")
	fs.StringVar(&cfg.pngPath, "png", "costcurve.png", "PNG plot output file")
	fs.IntVar(&cfg.history, "history", 0, "if positive, every memory store keeps this many revisions of history and lets watchers lag half as many, so that no watch lags or re-lists (default: the store's defaults, as BenchmarkE2E's -e2e.history)")
	fs.StringVar(&cfg.heapProfiles, "heapprofiles", "", "if set, the first memory run of every implementation and size writes a heap profile taken at the probe to this directory as heap-IMPL-OBJECTS.pprof")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return config{}, fmt.Errorf("bad size %q in -sizes", s)
		}
		cfg.sizes = append(cfg.sizes, n)
	}
	if cfg.runs < 1 || cfg.memoryRuns < 1 || cfg.workers < 1 {
		return config{}, errors.New("-runs, -memruns and -workers must be at least 1")
	}
	return cfg, nil
}
