package convergeprom

import (
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/converge-go/converge/reconcile"
	"github.com/prometheus/client_golang/prometheus"
)

// The gauges below are computed when the registry is gathered, from
// counters the hooks keep and from the queue and controller themselves,
// so that no goroutine updates them and they cost nothing between scrapes.
var (
	activeWorkersDesc = prometheus.NewDesc("controller_runtime_active_workers",
		"Number of currently used workers per controller", []string{"controller"}, nil)
	maxConcurrentDesc = prometheus.NewDesc("controller_runtime_max_concurrent_reconciles",
		"Maximum number of concurrent reconciles per controller", []string{"controller"}, nil)
	depthDesc = prometheus.NewDesc("workqueue_depth",
		"Current depth of workqueue by workqueue and priority", []string{"name", "controller", "priority"}, nil)
	unfinishedDesc = prometheus.NewDesc("workqueue_unfinished_work_seconds",
		"How many seconds of work has been done that is in progress and hasn't been observed by work_duration. "+
			"Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
		[]string{"name", "controller"}, nil)
	longestDesc = prometheus.NewDesc("workqueue_longest_running_processor_seconds",
		"How many seconds has the longest running processor for workqueue been running.", []string{"name", "controller"}, nil)
	staleDesc = prometheus.NewDesc("converge_stale_keys",
		"Keys out of date (a change not converged, or failing) for longer than the controller's StaleAfter", []string{"controller"}, nil)
	degradedDesc = prometheus.NewDesc("converge_store_degraded",
		"1 while the controller cannot follow its store (or another source's) and reconciles from its cache, else 0", []string{"controller"}, nil)
	dependencyUpDesc = prometheus.NewDesc("converge_dependency_up",
		"1 while the controller's dependency is up, 0 while it is down and the controller holds its keys (Health().Dependencies)", []string{"controller", "dependency"}, nil)
	dependencyDownDesc = prometheus.NewDesc("converge_dependency_down_seconds",
		"Seconds since the controller's dependency went down, 0 while it is up", []string{"controller", "dependency"}, nil)
	ownerlessDesc = prometheus.NewDesc("converge_shard_ownerless_buckets",
		"Buckets of keys that no shard replica works on, as the controller's replica sees them (Health().Ownerless)", []string{"controller"}, nil)
)

// scraped is the Collector of the gauges computed at scrape time.
type scraped struct{ m *Metrics }

func (s scraped) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{activeWorkersDesc, maxConcurrentDesc, depthDesc, unfinishedDesc, longestDesc, staleDesc, degradedDesc, ownerlessDesc, dependencyUpDesc, dependencyDownDesc} {
		ch <- d
	}
	for _, d := range checkpointDescs {
		ch <- d
	}
}

func (s scraped) Collect(ch chan<- prometheus.Metric) {
	s.m.mu.Lock()
	cs := slices.Collect(maps.Values(s.m.controllers))
	s.m.mu.Unlock()
	for _, c := range cs {
		c.collect(ch)
	}
}

func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

// collect sends one controller's scrape-time gauges.
func (c *Controller) collect(ch chan<- prometheus.Metric) {
	name := c.name
	h := c.health.Load()
	workers := c.workers.Load()
	var health reconcile.Health
	if h != nil {
		health = h.Health()
		workers = int64(health.Workers)
	}
	gauge(ch, maxConcurrentDesc, float64(workers), name)
	gauge(ch, activeWorkersDesc, float64(c.active.Load()), name)

	var unfinished, longest float64
	depth := map[string]float64{}
	if p := c.probe.Load(); p != nil {
		st := p.Stats()
		unfinished, longest = st.UnfinishedWork.Seconds(), st.LongestRunning.Seconds()
		p.DueByPriority(func(priority, n int) {
			c.see(priority)
			depth[strconv.Itoa(priority)] += float64(n)
		})
	}
	gauge(ch, unfinishedDesc, unfinished, name, name)
	gauge(ch, longestDesc, longest, name, name)
	c.mu.Lock()
	exceeded := len(c.seen) > maxPriorities
	for p := range c.seen {
		depth[strconv.Itoa(p)] += 0 // a priority seen before reports 0, as a gauge that went down
	}
	c.mu.Unlock()
	if exceeded {
		var sum float64
		for _, v := range depth {
			sum += v
		}
		depth = map[string]float64{exceededPriorities: sum}
	}
	for p, v := range depth {
		gauge(ch, depthDesc, v, name, name, p)
	}

	if h != nil {
		gauge(ch, staleDesc, float64(health.Stale), name)
		degraded := 0.0
		if len(health.Degraded) > 0 {
			degraded = 1
		}
		gauge(ch, degradedDesc, degraded, name)
		collectDependencies(ch, name, health)
		collectCheckpoint(ch, name, health)
		if reportsOwnerless(h.HealthReporter) {
			gauge(ch, ownerlessDesc, float64(len(health.Ownerless)), name)
		}
	}
}

// collectDependencies sends converge_dependency_up and
// converge_dependency_down_seconds for each of the controller's
// dependencies.
func collectDependencies(ch chan<- prometheus.Metric, name string, h reconcile.Health) {
	now := time.Now()
	for _, d := range h.Dependencies {
		up, down := 1.0, 0.0
		if d.Down {
			up, down = 0, now.Sub(d.Since).Seconds()
		}
		gauge(ch, dependencyUpDesc, up, name, d.Name)
		gauge(ch, dependencyDownDesc, down, name, d.Name)
	}
}

// reportsOwnerless reports whether h is a sharded controller: its
// Sharder reports its ownerless buckets (reconcile.Sharder.Ownerless).
func reportsOwnerless(h HealthReporter) bool {
	s, ok := h.(interface{ Sharder() reconcile.Sharder })
	return ok && s.Sharder() != nil
}
