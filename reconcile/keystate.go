package reconcile

import (
	"time"

	"github.com/converge-go/converge/queue"
)

// KeyState joins a key's place in the queue with its latest reconcile.
type KeyState struct {
	Key string
	// State is where the key is in the queue: waiting, delayed or
	// processing; zero if it is not queued.
	State queue.State
	// Dirty: the key is processing and was woken again meanwhile; it is
	// handed out again when the reconcile ends.
	Dirty bool
	// Since is when a processing key's reconcile started.
	Since time.Time
	// Until is when a delayed key becomes ready (for a processing key, the
	// deadline of an add due after it is done).
	Until time.Time
	// Priority is the priority of the key's next hand-out.
	Priority int
	// Retries is the key's retries (Request.Retries), reset by a success.
	Retries int
	// LastOutcome, LastError, LastAt and LastDuration describe the key's
	// latest reconcile (zero if none since it last converged after deletion).
	LastOutcome  Outcome
	LastError    string
	LastAt       time.Time
	LastDuration time.Duration
	// LastRevision is the object revision the latest reconcile saw.
	LastRevision int64
	// Triggers says what woke the key for its next (queued) reconcile and
	// LastTriggers for its latest one: "created", "updated", "deleted"
	// (the primary store), "listed", "enqueued", "resync", "retry",
	// "requeue", "held-change", "dependency-up" (retried as its
	// dependencies came back up), "store-back" (it waited for the store,
	// AwaitingStore, which serves again), "source NAME". Wake-ups that coalesce
	// into one reconcile are listed once.
	Triggers, LastTriggers []string
	// PendingSince is when the controller observed the oldest change of
	// the key that no successful reconcile has covered yet (zero if none).
	PendingSince time.Time
	// LastSuccess is when the key's latest successful reconcile started,
	// FailingSince when its current run of failures began (zero if it is
	// not failing), and LastConvergence the convergence latency of the
	// latest change that converged.
	LastSuccess     time.Time
	FailingSince    time.Time
	LastConvergence time.Duration
	// DeletingSince is when the controller first saw the key marked for
	// deletion, its finalizers still to run (zero if it is not).
	DeletingSince time.Time
	// Stale: the key has been out of date for longer than
	// Options.StaleAfter (see Health.Stale).
	Stale bool
	// TraceID identifies the trace of the key's latest reconcile, as
	// Options.Tracer reported it ("" without a Tracer, or if unsampled).
	TraceID string
}
