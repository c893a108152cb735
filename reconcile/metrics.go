package reconcile

import "time"

// Outcome classifies a finished reconcile.
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

// Metrics receives a controller's reconcile measurements. Implementations
// must be safe for concurrent use and fast; the workqueue's own metrics go to
// Options.QueueMetrics.
type Metrics interface {
	// Reconciled reports one reconcile of the named controller.
	Reconciled(controller string, outcome Outcome, duration time.Duration)
}
