package reconcile

import "time"

// Outcome classifies a finished reconcile, for introspection.
type Outcome string

const (
	// Success: the reconciler returned no error.
	Success Outcome = "success"
	// Failure: a transient error (or a timeout); the key backs off.
	Failure Outcome = "error"
	// TerminalFailure: an error marked with Terminal; the key is not retried.
	TerminalFailure Outcome = "terminal"
	// Conflict: a write lost against a newer revision; the key is
	// reconciled again at once against the newer object.
	Conflict Outcome = "conflict"
	// Panicked: the reconciler panicked; treated as a transient error.
	Panicked Outcome = "panic"
)

// Results of Metrics.ReconcileTotal, as controller-runtime labels them, plus
// "conflict", which converge counts apart from errors.
const (
	ResultSuccess      = "success"
	ResultRequeue      = "requeue"
	ResultRequeueAfter = "requeue_after"
	ResultError        = "error"
	ResultConflict     = "conflict"
)

// Metrics receives a controller's reconcile measurements. The method names
// follow controller-runtime's metrics, so an exporter can publish them under
// the names dashboards already use:
//
//	ReconcileTotal           controller_runtime_reconcile_total{controller, result}
//	ReconcileErrors          controller_runtime_reconcile_errors_total{controller}
//	TerminalReconcileErrors  controller_runtime_terminal_reconcile_errors_total{controller}
//	ReconcilePanics          controller_runtime_reconcile_panics_total{controller}
//	ReconcileTime            controller_runtime_reconcile_time_seconds{controller}
//
// The workqueue's metrics (depth, adds, queue latency, work duration,
// retries; unfinished work and longest running through queue.Stats) go to
// Options.QueueMetrics. With no Metrics configured nothing is called and
// nothing is allocated. Implementations must be safe for concurrent use.
type Metrics interface {
	// ReconcileTotal counts every finished reconcile by result:
	// ResultSuccess, ResultRequeue (success that asked to be retried on the
	// key's backoff), ResultRequeueAfter (success that asked to be polled),
	// ResultError (transient, terminal or panic) or ResultConflict.
	ReconcileTotal(controller, result string)
	// ReconcileErrors counts reconciles that failed: transient, terminal or
	// panicked (not conflicts).
	ReconcileErrors(controller string)
	// TerminalReconcileErrors counts terminal failures.
	TerminalReconcileErrors(controller string)
	// ReconcilePanics counts recovered panics.
	ReconcilePanics(controller string)
	// ReconcileTime observes how long a reconcile took.
	ReconcileTime(controller string, d time.Duration)
}

// report sends one reconcile's measurements to m.
func report(m Metrics, controller string, outcome Outcome, res Result, d time.Duration) {
	switch outcome {
	case Success:
		switch {
		case res.Requeue:
			m.ReconcileTotal(controller, ResultRequeue)
		case res.RequeueAfter > 0:
			m.ReconcileTotal(controller, ResultRequeueAfter)
		default:
			m.ReconcileTotal(controller, ResultSuccess)
		}
	case Conflict:
		m.ReconcileTotal(controller, ResultConflict)
	default:
		m.ReconcileTotal(controller, ResultError)
		m.ReconcileErrors(controller)
		switch outcome {
		case TerminalFailure:
			m.TerminalReconcileErrors(controller)
		case Panicked:
			m.ReconcilePanics(controller)
		}
	}
	m.ReconcileTime(controller, d)
}
