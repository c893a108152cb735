// Package tracing is the contract between the loop and a tracer: what
// package reconcile tells a Tracer (reconcile.Options.Tracer) of each
// reconcile, its writes and the external calls it marks, and StartCall,
// with which a reconciler or a kit marks such a call. It imports nothing
// of ours and no tracing library: reconcile/observe/convergeotel
// implements Tracer on OpenTelemetry.
//
// Without a Tracer nothing here allocates or calls anything: the loop
// marks a context only for a traced reconcile, and StartCall on an
// unmarked context returns it as it is.
package tracing

import (
	"context"
	"time"
)

// Tracer traces reconciles (reconcile.Options.Tracer): a span per
// reconcile, a child span per write through Request.Store and per
// external call a reconciler marks (StartCall). reconcile/observe/convergeotel implements
// it on OpenTelemetry; the loop itself depends on no tracing library.
//
// A nil Tracer traces nothing and costs nothing: no allocation and no
// call per reconcile. Its methods are called from the workers, several at
// once, and must not block.
type Tracer interface {
	// StartReconcile is called as the reconcile of one key begins, with
	// the reconcile's context; it returns the context the reconciler is
	// given (which carries the span) and the span, ended once the
	// reconcile's outcome is settled. ReconcileBatch calls are not traced.
	StartReconcile(ctx context.Context, s ReconcileStart) (context.Context, ReconcileSpan)
	// StartSpan begins a span inside the reconcile ctx belongs to: a write
	// through Request.Store (name "Create", "Update", "UpdateStatus",
	// "Delete", ... and the key written) or an external call (StartCall).
	// The context it returns is the one the write or call is made with; a
	// Tracer that wants the write's revision to carry a cause puts it
	// there (store.WithCause).
	StartSpan(ctx context.Context, name, key string) (context.Context, Span)
}

// ReconcileStart is what a Tracer is told of a reconcile as it begins.
type ReconcileStart struct {
	Controller string
	Key        string
	// Revision is the revision of the object the reconcile is given (of
	// the delete, for a deleted key).
	Revision int64
	// Retries is the key's backoff count (reconcile.Request.Retries).
	Retries int
	Deleted bool
	// Woken names what woke the key ("created", "retry", a source, ...),
	// as the debug page does.
	Woken []string
	// Causes are the changes of the key, oldest first, that no successful
	// or terminal reconcile has covered yet: the ones this reconcile
	// answers (an object found by a list, which carries no cause, is
	// none). A retry is given the same causes again. At most MaxCauses:
	// the oldest and the latest ones.
	Causes []Cause
}

// Cause is one change of the primary store that woke a key.
type Cause struct {
	// Revision is the revision of the change.
	Revision int64
	// Traceparent is the W3C traceparent its writer carried
	// (store.Event.Cause), "" if none.
	Traceparent string
	// Seen is when the controller observed the change.
	Seen time.Time
}

// MaxCauses bounds ReconcileStart.Causes: a key changed more often than
// this before a reconcile covered its changes keeps its oldest cause and
// the latest MaxCauses-1.
const MaxCauses = 8

// ReconcileSpan is the span of one reconcile.
type ReconcileSpan interface {
	// End ends the span with how the reconcile ended.
	End(e ReconcileEnd)
	// TraceID identifies the span's trace, as the debug page shows it
	// ("" if it has none: not sampled, say).
	TraceID() string
}

// ReconcileEnd is how a traced reconcile ended.
type ReconcileEnd struct {
	// Outcome is the reconcile's (reconcile.Outcome: "success",
	// "requeue", "error", ...), and Failed reports whether it is one of
	// failure (reconcile.Outcome.Failed).
	Outcome string
	Failed  bool
	Err     error
	// Converged reports that the reconcile covered changes, Latency then
	// being the convergence latency of the oldest: from when it was
	// observed to the reconcile's end.
	Converged bool
	Latency   time.Duration
}

// Span is a span inside a reconcile: a write or an external call.
type Span interface {
	// End ends the span: revision is the store revision a write made (0
	// for none), err how it ended.
	End(revision int64, err error)
}

// StartCall marks the start of an external call a reconciler (or a kit
// acting for it) makes inside a reconcile: with reconcile.Options.Tracer
// set, it begins a span named name as a child of the reconcile's, and
// returns the context to make the call with and the function to call with
// its error when it ends. Outside a traced reconcile it returns ctx and a
// function that does nothing, without allocating.
//
//	ctx, end := tracing.StartCall(ctx, "create role")
//	err := createRole(ctx, spec)
//	end(err)
func StartCall(ctx context.Context, name string) (context.Context, func(error)) {
	in, _ := ctx.Value(callerKey{}).(*caller)
	if in == nil {
		return ctx, endNothing
	}
	ctx, sp := in.tracer.StartSpan(ctx, name, in.key)
	return ctx, func(err error) { sp.End(0, err) }
}

// WithReconcile returns ctx marked as inside the traced reconcile of key,
// so that StartCall begins its spans with t. Package reconcile marks the
// context of each traced reconcile; a Tracer need not call it.
func WithReconcile(ctx context.Context, t Tracer, key string) context.Context {
	return context.WithValue(ctx, callerKey{}, &caller{tracer: t, key: key})
}

type callerKey struct{}

// caller is what WithReconcile marks a context with.
type caller struct {
	tracer Tracer
	key    string
}

func endNothing(error) {}
