package convergeprom_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/observe/convergeprom"
	"github.com/converge-go/converge/reconcile/shard"
	"github.com/converge-go/converge/store"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// printSeries writes the gathered series whose name is in names, one a line,
// sorted, with counters and gauges by value and histograms by sample count.
func printSeries(reg *prometheus.Registry, names ...string) {
	families, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	var lines []string
	for _, f := range families {
		if !slices.Contains(names, f.GetName()) {
			continue
		}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			series := f.GetName() + "{" + strings.Join(labels, ",") + "}"
			switch f.GetType() {
			case dto.MetricType_HISTOGRAM:
				lines = append(lines, fmt.Sprintf("%s count %d", series, m.GetHistogram().GetSampleCount()))
			case dto.MetricType_COUNTER:
				lines = append(lines, fmt.Sprintf("%s %g", series, m.GetCounter().GetValue()))
			default:
				lines = append(lines, fmt.Sprintf("%s %g", series, m.GetGauge().GetValue()))
			}
		}
	}
	slices.Sort(lines)
	fmt.Println(strings.Join(lines, "\n"))
}

// A controller's metrics wired in two lines; its series exist from the
// start, as controller-runtime's do.
func ExampleInstrument() {
	reg := prometheus.NewRegistry()
	m, err := convergeprom.New(reg)
	if err != nil {
		panic(err)
	}
	opts := reconcile.Options[string]{Name: "jobs", Workers: 4}
	ctl := convergeprom.Instrument(m, &opts)
	rec := reconcile.ReconcilerFunc[string](func(context.Context, reconcile.Request[string]) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	})
	c, err := reconcile.New(store.NewMemory[string](), rec, opts)
	if err != nil {
		panic(err)
	}
	ctl.Watch(c)
	printSeries(reg, "controller_runtime_max_concurrent_reconciles", "controller_runtime_reconcile_total", "converge_stale_keys")
	// Output:
	// controller_runtime_max_concurrent_reconciles{controller="jobs"} 4
	// controller_runtime_reconcile_total{controller="jobs",result="error"} 0
	// controller_runtime_reconcile_total{controller="jobs",result="requeue"} 0
	// controller_runtime_reconcile_total{controller="jobs",result="requeue_after"} 0
	// controller_runtime_reconcile_total{controller="jobs",result="success"} 0
	// converge_stale_keys{controller="jobs"} 0
}

// Counted the way controller-runtime counts: a deduplicated add is not an
// add, a delayed add is a retry, and a key added while processing is due
// (depth 1) until it is handed out again.
func ExampleController() {
	reg := prometheus.NewRegistry()
	m, err := convergeprom.New(reg)
	if err != nil {
		panic(err)
	}
	ctl := m.Controller("jobs", convergeprom.ControllerOptions{Workers: 2})
	q := queue.New(queue.Options[string]{Metrics: ctl})
	q.Add("a")
	q.Add("a") // deduplicated
	q.AddWith("b", queue.AddOptions{After: time.Hour})
	key, _ := q.Get(context.Background())
	q.Add(key) // processing: handed out again after Done
	ctl.Reconciled("jobs", reconcile.Panicked, 10*time.Millisecond)
	q.Done(key)
	printSeries(reg, "workqueue_adds_total", "workqueue_retries_total", "workqueue_depth", "workqueue_work_duration_seconds",
		"controller_runtime_reconcile_panics_total", "controller_runtime_reconcile_errors_total")
	// Output:
	// controller_runtime_reconcile_errors_total{controller="jobs"} 1
	// controller_runtime_reconcile_panics_total{controller="jobs"} 1
	// workqueue_adds_total{controller="jobs",name="jobs"} 2
	// workqueue_depth{controller="jobs",name="jobs",priority="0"} 1
	// workqueue_retries_total{controller="jobs",name="jobs"} 1
	// workqueue_work_duration_seconds{controller="jobs",name="jobs"} count 1
}

// A Metrics is also a shard.Metrics: give it to every replica's
// shard.Options.Metrics (here its hooks are called by hand, as a Replica
// calls them when it takes buckets).
func ExampleMetrics_BucketsOwned() {
	reg := prometheus.NewRegistry()
	m, err := convergeprom.New(reg)
	if err != nil {
		panic(err)
	}
	var metrics shard.Metrics = m // shard.Options{ID: "replica-1", Metrics: m}
	metrics.Handover("replica-1", "initial", 3*time.Millisecond)
	metrics.Handover("replica-1", "takeover", 2500*time.Millisecond)
	metrics.BucketsOwned("replica-1", 2)
	printSeries(reg, "converge_shard_buckets_owned", "converge_shard_handover_duration_seconds")
	// Output:
	// converge_shard_buckets_owned{replica="replica-1"} 2
	// converge_shard_handover_duration_seconds{kind="initial",replica="replica-1"} count 1
	// converge_shard_handover_duration_seconds{kind="takeover",replica="replica-1"} count 1
}
