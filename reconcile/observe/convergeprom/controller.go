package convergeprom

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile"
	"github.com/prometheus/client_golang/prometheus"
)

// ControllerOptions describe a controller to the adapter.
type ControllerOptions struct {
	// Workers is the controller's reconcile.Options.Workers, reported as
	// controller_runtime_max_concurrent_reconciles (default 1, as there).
	Workers int
	// Timeout is the controller's reconcile.Options.Timeout: a reconcile
	// that lasts at least this long counts in
	// controller_runtime_reconcile_timeouts_total (0: none counted).
	Timeout time.Duration
}

// Controller is the adapter's view of one controller: it implements
// reconcile.Metrics and queue.Metrics (with the queue's optional
// DueMetrics and ProbeMetrics), so one value serves as both
// reconcile.Options.Metrics and reconcile.Options.QueueMetrics. Give it to
// one controller's queue only: the queue it measures is the one created
// last. Create it with Metrics.Controller or Instrument.
type Controller struct {
	m    *Metrics
	name string

	workers atomic.Int64
	timeout atomic.Int64 // time.Duration
	active  atomic.Int64 // keys handed out and not Done

	probe  atomic.Pointer[probeRef]
	health atomic.Pointer[healthRef]

	mu   sync.Mutex
	seen map[int]struct{} // priorities that have had due keys, for workqueue_depth

	total                                           map[reconcile.Outcome]prometheus.Counter
	errors, terminal, panics, timeouts, adds, retry prometheus.Counter
	fenced, refused                                 prometheus.Counter
	queueDuration, workDuration                     prometheus.Observer
	// reconcileTime is created at the first reconcile, as
	// controller-runtime does, so that the series match before it.
	reconcileTime     prometheus.Observer
	reconcileTimeOnce sync.Once
	convergence       prometheus.Observer
}

type probeRef struct{ queue.Probe }

type healthRef struct{ HealthReporter }

// HealthReporter is what Watch reads at scrape time: *reconcile.Controller
// is one. If it also has a Workers() int method, that is read for
// controller_runtime_max_concurrent_reconciles instead of
// ControllerOptions.Workers and SetWorkers.
type HealthReporter interface {
	Health() reconcile.Health
}

// maxPriorities is controller-runtime's bound on the priority label values
// of workqueue_depth; past it, depth is reported under
// exceededPriorities.
const (
	maxPriorities      = 25
	exceededPriorities = "exceeded_cardinality_limit"
)

// Controller returns the adapter's value for the controller named name,
// creating its series as controller-runtime does when a controller starts:
// every reconcile counter at 0 (reconcile_total for success, error, requeue
// and requeue_after), max_concurrent_reconciles and active_workers, and the
// workqueue's series (name and controller labels both name). Later calls
// with the same name return the same value, with the non-zero fields of o
// applied.
func (m *Metrics) Controller(name string, o ControllerOptions) *Controller {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.controllers[name]
	if !ok {
		c = m.newController(name)
		m.controllers[name] = c
		c.workers.Store(1)
	}
	if o.Workers > 0 {
		c.workers.Store(int64(o.Workers))
	}
	if o.Timeout > 0 {
		c.timeout.Store(int64(o.Timeout))
	}
	return c
}

func (m *Metrics) newController(name string) *Controller {
	c := &Controller{m: m, name: name, seen: make(map[int]struct{}), total: make(map[reconcile.Outcome]prometheus.Counter)}
	for _, o := range []reconcile.Outcome{reconcile.Success, reconcile.Failure, reconcile.Requeue, reconcile.RequeueAfter} {
		c.total[o] = m.reconcileTotal.WithLabelValues(name, resultLabel(o))
	}
	c.errors = m.reconcileErrors.WithLabelValues(name)
	c.terminal = m.terminalErrors.WithLabelValues(name)
	c.panics = m.panics.WithLabelValues(name)
	c.timeouts = m.timeouts.WithLabelValues(name)
	c.adds = m.adds.WithLabelValues(name, name)
	c.retry = m.retries.WithLabelValues(name, name)
	c.queueDuration = m.queueDuration.WithLabelValues(name, name)
	c.workDuration = m.workDuration.WithLabelValues(name, name)
	c.convergence = m.convergence.WithLabelValues(name)
	c.fenced = m.fenced.WithLabelValues(name)
	c.refused = m.refused.WithLabelValues(name)
	return c
}

// Instrument wires the adapter into the options of a controller before
// reconcile.New: it sets o.Metrics and o.QueueMetrics to the Controller for
// o.Name, with o.Workers and o.Timeout, and returns it (call Watch with the
// controller New returns for the health series). It overwrites any Metrics
// or QueueMetrics o had.
func Instrument[T any](m *Metrics, o *reconcile.Options[T]) *Controller {
	c := m.Controller(o.Name, ControllerOptions{Workers: o.Workers, Timeout: o.Timeout})
	o.Metrics, o.QueueMetrics = c, c
	return c
}

// Watch makes the controller's health part of every scrape:
// converge_stale_keys (Health.Stale), converge_store_degraded (1 while
// Health.Degraded is not empty), per dependency, converge_dependency_up
// and converge_dependency_down_seconds (Health.Dependencies) and, for a
// controller with a checkpoint, the converge_checkpoint_* series
// (Health.Checkpoint). Health is read at scrape time only, so between
// scrapes it costs nothing. Until Watch, those series are absent.
func (c *Controller) Watch(h HealthReporter) { c.health.Store(&healthRef{h}) }

// SetWorkers changes controller_runtime_max_concurrent_reconciles: call it
// with reconcile.Controller.SetWorkers.
func (c *Controller) SetWorkers(n int) { c.workers.Store(int64(max(n, 1))) }

// Reconciled implements reconcile.Metrics (see Metrics.Reconciled).
func (c *Controller) Reconciled(controller string, outcome reconcile.Outcome, took time.Duration) {
	if controller != c.name {
		c.m.Reconciled(controller, outcome, took)
		return
	}
	c.reconciled(outcome, took)
}

func (c *Controller) reconciled(outcome reconcile.Outcome, took time.Duration) {
	total, ok := c.total[outcome]
	if !ok { // Conflict: a label value controller-runtime does not have
		total = c.m.reconcileTotal.WithLabelValues(c.name, resultLabel(outcome))
	}
	total.Inc()
	if outcome.Failed() {
		c.errors.Inc()
	}
	switch outcome {
	case reconcile.TerminalFailure:
		c.terminal.Inc()
	case reconcile.Panicked:
		c.panics.Inc()
	}
	if t := time.Duration(c.timeout.Load()); t > 0 && took >= t {
		c.timeouts.Inc()
	}
	c.reconcileTimeOnce.Do(func() { c.reconcileTime = c.m.reconcileTime.WithLabelValues(c.name) })
	c.reconcileTime.Observe(took.Seconds())
}

// Converged implements reconcile.Metrics (see Metrics.Converged).
func (c *Controller) Converged(controller string, latency time.Duration) {
	c.m.Converged(controller, latency)
}

// WriteRejected implements reconcile.Metrics (see Metrics.WriteRejected).
func (c *Controller) WriteRejected(controller string) { c.m.WriteRejected(controller) }

// KeyRefused implements reconcile.Metrics (see Metrics.KeyRefused).
func (c *Controller) KeyRefused(controller string) { c.m.KeyRefused(controller) }

// Added implements queue.Metrics. It counts nothing: workqueue_adds_total
// counts Due, as controller-runtime counts a key when it becomes ready,
// not every add (a deduplicated add, or a delayed one before its delay
// runs out, is not an add there).
func (c *Controller) Added() {}

// Depth implements queue.Metrics. It records nothing: workqueue_depth is
// read from the queue at scrape time (see Attach).
func (c *Controller) Depth(int) {}

// Retried implements queue.Metrics. It counts nothing:
// workqueue_retries_total counts Delayed, every add with a delay, as
// controller-runtime does (a rate-limited add, a RequeueAfter, a delayed
// add, and converge's backoff after a failure, which it adds with a delay
// rather than as a rate-limited add).
func (c *Controller) Retried() {}

// QueueLatency implements queue.Metrics: workqueue_queue_duration_seconds.
func (c *Controller) QueueLatency(d time.Duration) {
	c.active.Add(1)
	c.queueDuration.Observe(d.Seconds())
}

// WorkDuration implements queue.Metrics: workqueue_work_duration_seconds.
func (c *Controller) WorkDuration(d time.Duration) {
	c.active.Add(-1)
	c.workDuration.Observe(d.Seconds())
}

// Due implements queue.DueMetrics: workqueue_adds_total, and the priority
// label values of workqueue_depth.
func (c *Controller) Due(priority int) {
	c.adds.Inc()
	c.see(priority)
}

// see records a priority that has had due keys, up to maxPriorities+1 of
// them (past maxPriorities, depth is reported as exceeded).
func (c *Controller) see(priority int) {
	c.mu.Lock()
	if _, ok := c.seen[priority]; !ok && len(c.seen) <= maxPriorities {
		c.seen[priority] = struct{}{}
	}
	c.mu.Unlock()
}

// Delayed implements queue.DueMetrics: workqueue_retries_total.
func (c *Controller) Delayed() { c.retry.Inc() }

// Attach implements queue.ProbeMetrics: the queue read at scrape time for
// workqueue_depth, workqueue_unfinished_work_seconds and
// workqueue_longest_running_processor_seconds.
func (c *Controller) Attach(p queue.Probe) { c.probe.Store(&probeRef{p}) }

var (
	_ reconcile.Metrics  = (*Controller)(nil)
	_ queue.DueMetrics   = (*Controller)(nil)
	_ queue.ProbeMetrics = (*Controller)(nil)
)

// resultLabel returns controller-runtime's value of the result label of
// controller_runtime_reconcile_total for o: "success", "requeue",
// "requeue_after" or "error" (for Failure, TerminalFailure and Panicked),
// and "conflict", which converge counts apart from errors.
func resultLabel(o reconcile.Outcome) string {
	if o.Failed() {
		return string(reconcile.Failure)
	}
	return string(o)
}
