package reconcile

import (
	"errors"
	"time"

	"github.com/converge-go/converge/reconcile/dependency"
	"github.com/converge-go/converge/store"
)

// outcomeCode is an Outcome as an index of outcomes, for per-key records.
type outcomeCode uint8

// outcomes lists every Outcome, the zero code standing for none.
var outcomes = [...]Outcome{"", Success, Requeue, RequeueAfter, Failure, TerminalFailure, Conflict, Panicked, DependencyDown, AwaitingStore}

// codeOf returns o's code (0 for an unknown Outcome).
func codeOf(o Outcome) outcomeCode {
	for i, x := range outcomes {
		if x == o {
			return outcomeCode(i)
		}
	}
	return 0
}

// outcomeNeed ranks each outcome code by how much its key needs a person,
// for ByOutcome (see need).
var outcomeNeed = func() (n [len(outcomes)]uint8) {
	for i, o := range outcomes {
		n[i] = o.need()
	}
	return n
}()

// need ranks o by how much its key needs a person, most first: a panic, a
// transient error, a terminal failure, a dependency down or the store
// awaited (the dependency, or the store, needs one more than the key), a
// conflict, a requeue of either kind, a success; 0 for none (never
// reconciled).
func (o Outcome) need() uint8 {
	switch o {
	case Panicked:
		return 7
	case Failure:
		return 6
	case TerminalFailure:
		return 5
	case DependencyDown, AwaitingStore:
		return 4
	case Conflict:
		return 3
	case Requeue, RequeueAfter:
		return 2
	case Success:
		return 1
	}
	return 0
}

// Outcome is how a reconcile ended. One vocabulary serves logs, metrics
// (Metrics.Reconciled) and introspection (KeyState.LastOutcome).
type Outcome string

const (
	// Success: the reconciler returned no error and asked for nothing.
	Success Outcome = "success"
	// Requeue: no error, and Result.Requeue asked to be called again on
	// the key's backoff.
	Requeue Outcome = "requeue"
	// RequeueAfter: no error, and Result.RequeueAfter asked to be polled.
	RequeueAfter Outcome = "requeue_after"
	// Failure: a transient error (or a timeout); the key backs off.
	Failure Outcome = "error"
	// TerminalFailure: an error marked with Terminal; the key is not retried.
	TerminalFailure Outcome = "terminal"
	// Conflict: a write lost against a newer revision; the key is
	// reconciled again at once against the newer object.
	Conflict Outcome = "conflict"
	// Panicked: the reconciler panicked (a *PanicError); retried like a
	// transient error.
	Panicked Outcome = "panic"
	// DependencyDown: an error marked with dependency.Down naming one of
	// Options.Dependencies. The dependency is down at once, and the key
	// waits in the queue, without backoff, until it is up again (an
	// unknown name is a Failure).
	DependencyDown Outcome = "dependency_down"
	// AwaitingStore: the controller runs from its checkpoint
	// (Options.Checkpoint, Health.Checkpoint.Active) and neither its cache
	// nor the checkpoint holds the key. The reconciler is not called: the
	// key is not reconciled as deleted on the checkpoint's word, since the
	// store may hold it. It waits, without backoff, until the store serves
	// again, and is then reconciled as the store has it.
	AwaitingStore Outcome = "awaiting_store"
)

// errAwaitingStore is how a key that waits for the store ends its
// hand-out (AwaitingStore).
var errAwaitingStore = errors.New("reconcile: the key is in neither the cache nor the checkpoint the controller runs from; it waits for the store to say whether it exists")

// Settled reports whether the reconcile dealt with the object it was given:
// it succeeded (whatever it asked for next) or failed terminally. A settled
// reconcile covers its object's revision for WaitForRevision.
func (o Outcome) Settled() bool {
	switch o {
	case Success, Requeue, RequeueAfter, TerminalFailure:
		return true
	}
	return false
}

// Failed reports whether the reconcile failed: transient, terminal,
// panicked or for a dependency down (a conflict is not a failure: it is a
// newer object to handle).
func (o Outcome) Failed() bool {
	return o == Failure || o == TerminalFailure || o == Panicked || o == DependencyDown
}

// Metrics receives a controller's measurements. The workqueue's go to
// Options.QueueMetrics. With no Metrics configured nothing is called and
// nothing is allocated. Implementations must be safe for concurrent use.
type Metrics interface {
	// Reconciled is called once per finished reconcile, with its outcome
	// and how long it took. An exporter derives controller-runtime's
	// series from it: reconcile_total{result} from Outcome.Result,
	// errors_total from Failed, the terminal and panic totals from
	// TerminalFailure and Panicked, reconcile_time_seconds from took.
	Reconciled(controller string, outcome Outcome, took time.Duration)
	// Converged is called when a successful reconcile covers changes of a
	// key, with the convergence latency: the time from when the
	// controller observed the oldest of those changes to that success,
	// retries and superseded changes included (a change superseded before
	// it converged counts within the newer one's episode). Terminal
	// failures do not converge.
	Converged(controller string, latency time.Duration)
	// WriteRejected is called when a write through Request.Store during a
	// term of leadership (or of a shard's ownership) fails with
	// store.ErrGuardFailed: a deposed owner's write that the fence stopped.
	WriteRejected(controller string)
	// KeyRefused is called for each key refused because it is outside the
	// controller's view (see Health.Refused): a source, a FromStore mapper
	// or Enqueue handed in a key that is not a valid store key or not
	// under Options.Prefix. It is never reconciled.
	KeyRefused(controller string)
}

// classify names how a reconcile that returned res and err ended.
func classify(res Result, err error) Outcome {
	if err == nil {
		switch {
		case res.Requeue:
			return Requeue
		case res.RequeueAfter > 0:
			return RequeueAfter
		}
		return Success
	}
	var pe *PanicError
	switch {
	case errors.As(err, &pe):
		return Panicked
	case errors.Is(err, errAwaitingStore):
		return AwaitingStore
	case errors.Is(err, ErrTerminal):
		return TerminalFailure
	case errors.Is(err, dependency.ErrDown):
		return DependencyDown
	case errors.Is(err, store.ErrConflict):
		return Conflict
	}
	return Failure
}
