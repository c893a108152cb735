package reconcile

import (
	"context"
	"errors"
	"time"

	"github.com/converge-go/converge/internal/panicerr"
	"github.com/converge-go/converge/store"
)

// Request is what a Reconciler is asked to converge: one key, with the
// latest desired object the controller's cache holds for it.
type Request[T any] struct {
	Key string
	// Object is the latest cached object. If Deleted, it is the last value
	// if the cache held the key (Object.Revision is then the revision of
	// the delete), so cleanup has what it needs, and the zero Object
	// otherwise (a key of the view woken by another source that the store
	// never held, or whose deletion was already reconciled).
	Object store.Object[T]
	// Deleted reports that the key is inside the controller's view and
	// that the store does not hold it at the revision the cache reflects.
	// A key outside the view (not a valid store key, or not under
	// Options.Prefix) is never reconciled, so it is never reported
	// deleted: the controller cannot see whether the store holds it, and
	// refuses it where it enters (see Health.Refused).
	Deleted bool
	// Deleting reports that the object is in the store, marked for
	// deletion: it has finalizers (store/apistore), and the store removes
	// it once the last is removed. The reconciler cleans up what it made
	// for the object, then removes its finalizer through Store
	// (resource.Finalize does both). No predicate filters the change that
	// marks an object, so a deletion made while no controller ran is
	// carried out when one starts. Only values whose type has a
	// Deleting() bool method (apistore.Meta's, embedded in
	// resource.Resource) can be marked.
	Deleting bool
	// Retries is the key's retries: the reconciles since its last success
	// that failed or asked for Result.Requeue (0 on a first try), as the
	// controller's rate limiter counts them (its NumRequeues). The
	// limiter's delay after n retries is what the key waits before its
	// next try.
	Retries int
	// Store writes through the controller (see Controller for what that
	// adds: fencing by the current term, no wake-up by the write's own
	// echo, and no later reconcile of the key given an object older than
	// the write). Reconcilers write their status with it; reads go to the
	// store unchanged. It is a store.BatchWriter: a BatchReconciler may
	// write the statuses of its batch with one store.WriteBatch, each
	// write fenced and recorded as if made alone.
	Store store.Store[T]
}

// Result tells the controller when to look at the key again.
type Result struct {
	// Requeue, with a nil error, reconciles the key again after its rate
	// limiter's delay, as an error would, but without logging or counting
	// a failure: for work that is progressing but not done (a job whose
	// next attempt was launched). Request.Retries counts these tries; the
	// backoff is forgotten at the next success without Requeue.
	Requeue bool
	// RequeueAfter, if positive, reconciles the key again after this long,
	// even if nothing changes (for polling the world). With an error, the
	// earlier of RequeueAfter and the error's backoff wins.
	RequeueAfter time.Duration
}

// Reconciler converges the world toward one key's desired state. It must be
// idempotent: a reconcile that finds nothing to change changes nothing.
//
// A nil error means the key converged: its backoff is forgotten. An error
// requeues the key with per-key backoff, unless it is terminal (see
// Terminal). An error matching store.ErrConflict (a status write that lost
// against a newer write) requeues the key at once to reconcile the newer
// object, and is counted as a conflict, not an error. A panic is recovered
// and treated as an error.
type Reconciler[T any] interface {
	Reconcile(ctx context.Context, req Request[T]) (Result, error)
}

// ReconcilerFunc adapts a function to Reconciler.
type ReconcilerFunc[T any] func(ctx context.Context, req Request[T]) (Result, error)

// Reconcile calls f.
func (f ReconcilerFunc[T]) Reconcile(ctx context.Context, req Request[T]) (Result, error) {
	return f(ctx, req)
}

// ErrTerminal matches every error made by Terminal.
var ErrTerminal = errors.New("reconcile: terminal")

// Terminal marks err as terminal: retrying cannot help (invalid spec,
// permission denied). The key is not requeued and its backoff is reset; the
// error is logged and counted. A later change to the key reconciles it again.
func Terminal(err error) error {
	if err == nil {
		return nil
	}
	return terminalError{err}
}

type terminalError struct{ err error }

func (e terminalError) Error() string        { return "terminal: " + e.err.Error() }
func (e terminalError) Unwrap() error        { return e.err }
func (e terminalError) Is(target error) bool { return target == ErrTerminal }

// PanicError is the error a recovered panic becomes: in a reconcile (the
// key is retried with backoff) and in a runnable of a manager.Manager (the
// manager stops). Find it with errors.As; its Value is what was passed to
// panic and its Stack the goroutine's stack where it was recovered.
type PanicError = panicerr.Error
