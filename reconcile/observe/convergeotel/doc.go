// Package convergeotel traces converge's reconciles with OpenTelemetry,
// from the write that changed an object to the reconcile that converged
// it, across processes.
//
// Give a controller a Tracer (reconcile.Options.Tracer = New(opts)) and:
//   - each reconcile is a span carrying the controller, the key, the
//     object's revision, the retries, what woke it, the revisions of the
//     changes it answers (converge.cause_revisions), its outcome and, when
//     it converged them, the convergence latency;
//   - each write through reconcile.Request.Store and each external call
//     marked with tracing.StartCall is a child span; TraceCheck makes a
//     dependency's checks spans of their own;
//   - a reconcile's parent is the writer's span of the oldest change it
//     answers and it links to every such writer: a retry is a new span
//     with the same parent and links, and a change that superseded another
//     before the key was reconciled is linked with it;
//   - each write's span is the cause of the revision it makes, so the
//     reconciles that revision wakes, in this process or another, join
//     the same trace.
//
// A writer joins a trace by writing with ContextWithCause(ctx), where ctx
// holds its span (store.WithCause), in process or through httpstore's
// client, which sends the traceparent header; a client made with
// httpstore.WithCauseOf(CauseOf) does it for every write; the store server records it
// with the revision, and its watch stream delivers it with the event. Any
// HTTP client may send the header itself; convergectl sends
// $TRACEPARENT. Causes are metadata of a revision, kept in memory for as
// long as the store keeps the revision in its watch history (bounded:
// store.WithCause says by what, per backend), never with the object; a
// controller keeps at most tracing.MaxCauses per key, until a
// reconcile covers them.
//
// Sampling is the TracerProvider's sampler: sdktrace.ParentBased over a
// ratio keeps or drops a write and everything it caused together. Logs
// inside a reconcile carry trace_id and span_id through LogHandler.
//
// Without a Tracer the loop pays nothing (reconcile's
// BenchmarkReconcileLoop); with every reconcile sampled, the OpenTelemetry
// SDK costs about two spans per reconcile (reconcile/internal/bench
// README.md has the figures).
package convergeotel
