package convergeprom

import (
	"fmt"
	"sync"
	"time"

	"github.com/converge-go/converge/internal/invalid"
	"github.com/converge-go/converge/reconcile"
	"github.com/prometheus/client_golang/prometheus"
)

// ErrInvalid matches the error New returns for a nil Registerer. errors.Is
// matches it with the ErrInvalid of every converge package.
var ErrInvalid error = invalid.New("convergeprom")

// Metrics holds every series of the adapter, registered on one Registerer.
// It implements reconcile.Metrics for any number of controllers (told apart
// by their name) and shard.Metrics for any number of replicas (told apart
// by their ID); Controller gives the per-controller value that also
// measures the workqueue. All methods are safe for concurrent use.
type Metrics struct {
	// controller-runtime's reconcile series.
	reconcileTotal  *prometheus.CounterVec
	reconcileErrors *prometheus.CounterVec
	terminalErrors  *prometheus.CounterVec
	panics          *prometheus.CounterVec
	timeouts        *prometheus.CounterVec
	reconcileTime   *prometheus.HistogramVec
	// controller-runtime's workqueue series (the pushed ones).
	adds          *prometheus.CounterVec
	retries       *prometheus.CounterVec
	queueDuration *prometheus.HistogramVec
	workDuration  *prometheus.HistogramVec
	// converge's own pushed series.
	convergence *prometheus.HistogramVec
	fenced      *prometheus.CounterVec
	refused     *prometheus.CounterVec
	// converge's sharding series (shard.Metrics).
	bucketsOwned *prometheus.GaugeVec
	handover     *prometheus.HistogramVec

	mu          sync.Mutex
	controllers map[string]*Controller
}

// reconcileBuckets are controller-runtime's buckets of
// controller_runtime_reconcile_time_seconds.
var reconcileBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
	1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60}

// convergenceBuckets span a change converging at once to one that took an
// hour of retries.
var convergenceBuckets = []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600}

// histogram returns a HistogramVec with controller-runtime's native
// histogram settings alongside the classic buckets.
func histogram(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: name, Help: help, Buckets: buckets,
		NativeHistogramBucketFactor:     1.1,
		NativeHistogramMaxBucketNumber:  100,
		NativeHistogramMinResetDuration: time.Hour,
	}, labels)
}

func counter(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

// New registers the adapter's series on reg and returns it. Nothing is
// registered anywhere else. It fails, registering nothing, if reg is nil
// or already holds a series of the same name (controller-runtime's own
// metrics, for instance: use a registry of converge's, or only one of the
// two).
func New(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		return nil, fmt.Errorf("%w: nil Registerer", ErrInvalid)
	}
	wq := []string{"name", "controller"}
	queueBuckets := prometheus.ExponentialBuckets(10e-9, 10, 12)
	m := &Metrics{
		reconcileTotal:  counter("controller_runtime_reconcile_total", "Total number of reconciliations per controller", "controller", "result"),
		reconcileErrors: counter("controller_runtime_reconcile_errors_total", "Total number of reconciliation errors per controller", "controller"),
		terminalErrors:  counter("controller_runtime_terminal_reconcile_errors_total", "Total number of terminal reconciliation errors per controller", "controller"),
		panics:          counter("controller_runtime_reconcile_panics_total", "Total number of reconciliation panics per controller", "controller"),
		timeouts:        counter("controller_runtime_reconcile_timeouts_total", "Total number of reconciliation timeouts per controller", "controller"),
		reconcileTime:   histogram("controller_runtime_reconcile_time_seconds", "Length of time per reconciliation per controller", reconcileBuckets, "controller"),
		adds:            counter("workqueue_adds_total", "Total number of adds handled by workqueue", wq...),
		retries:         counter("workqueue_retries_total", "Total number of items added to the workqueue with a non-zero delay (rate-limited requeues, explicit RequeueAfter or AddAfter calls)", wq...),
		queueDuration:   histogram("workqueue_queue_duration_seconds", "How long in seconds an item stays in workqueue before being requested", queueBuckets, wq...),
		workDuration:    histogram("workqueue_work_duration_seconds", "How long in seconds processing an item from workqueue takes.", queueBuckets, wq...),
		convergence:     histogram("converge_convergence_latency_seconds", "Time from the controller observing a change of a key to the success of a reconcile covering it, retries included", convergenceBuckets, "controller"),
		fenced:          counter("converge_fenced_writes_rejected_total", "Writes of a deposed owner (leader or shard) that the fence refused", "controller"),
		refused:         counter("converge_refused_keys_total", "Keys handed to the controller (by a source, a mapper or Enqueue) outside its view and refused, never reconciled", "controller"),
		bucketsOwned: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "converge_shard_buckets_owned",
			Help: "Buckets of keys the shard replica owns"}, []string{"replica"}),
		handover: histogram("converge_shard_handover_duration_seconds",
			"Time from a shard replica first seeing the plan name it a bucket's owner to owning the bucket, by kind (initial, planned, takeover)",
			handoverBuckets, "replica", "kind"),
		controllers: make(map[string]*Controller),
	}
	cs := []prometheus.Collector{m.reconcileTotal, m.reconcileErrors, m.terminalErrors, m.panics, m.timeouts, m.reconcileTime,
		m.adds, m.retries, m.queueDuration, m.workDuration, m.convergence, m.fenced, m.refused, m.bucketsOwned, m.handover, scraped{m}}
	for i, c := range cs {
		if err := reg.Register(c); err != nil {
			for _, done := range cs[:i] {
				reg.Unregister(done)
			}
			return nil, fmt.Errorf("convergeprom: %w", err)
		}
	}
	return m, nil
}

// Reconciled implements reconcile.Metrics: it counts the reconcile the way
// controller-runtime does. The result label is resultLabel(outcome): "success",
// "requeue", "requeue_after", "error" (transient, terminal and panicked
// failures alike), or "conflict" for a write that lost against a newer
// revision, which controller-runtime cannot tell from an error and
// converge counts apart (it is not in errors_total; the series appears
// when the first conflict does). A failure also counts in errors_total, a
// terminal one in terminal_reconcile_errors_total, a panic in
// reconcile_panics_total; took is observed in reconcile_time_seconds, and a
// reconcile that lasted at least the controller's ControllerOptions.Timeout
// counts in reconcile_timeouts_total (controller-runtime counts a reconcile
// whose deadline had passed when it returned, whatever its result).
func (m *Metrics) Reconciled(controller string, outcome reconcile.Outcome, took time.Duration) {
	m.Controller(controller, ControllerOptions{}).reconciled(outcome, took)
}

// Converged implements reconcile.Metrics: latency is observed in
// converge_convergence_latency_seconds.
func (m *Metrics) Converged(controller string, latency time.Duration) {
	m.Controller(controller, ControllerOptions{}).convergence.Observe(latency.Seconds())
}

// WriteRejected implements reconcile.Metrics: it counts in
// converge_fenced_writes_rejected_total.
func (m *Metrics) WriteRejected(controller string) {
	m.Controller(controller, ControllerOptions{}).fenced.Inc()
}

// KeyRefused implements reconcile.Metrics: it counts in
// converge_refused_keys_total.
func (m *Metrics) KeyRefused(controller string) {
	m.Controller(controller, ControllerOptions{}).refused.Inc()
}

var _ reconcile.Metrics = (*Metrics)(nil)
