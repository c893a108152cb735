package convergeotel

import (
	"context"
	"sync"

	"github.com/converge-go/converge/reconcile/tracing"
	"github.com/converge-go/converge/store"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the spans this package makes.
const ScopeName = "github.com/converge-go/converge/reconcile/observe/convergeotel"

// Options configure a Tracer. The zero value traces through the global
// TracerProvider (otel.GetTracerProvider).
type Options struct {
	// TracerProvider makes the spans (default otel.GetTracerProvider()).
	// Sampling is its sampler's: a reconcile span's parent is its oldest
	// cause, so sdktrace.ParentBased(sdktrace.TraceIDRatioBased(f)) keeps
	// or drops a write and everything it caused together.
	TracerProvider trace.TracerProvider
}

// Tracer is a tracing.Tracer on OpenTelemetry: a span per reconcile
// (controller, key, revision, retries, what woke it, outcome, convergence
// latency), a child span per write through Request.Store and per external
// call (tracing.StartCall). A reconcile's parent is the span of the
// oldest write that caused it and it links to every cause, so one trace
// holds a user's write, the reconciles it woke and their writes, and the
// reconciles those woke in turn, across processes (the cause travels with
// the revision: store.WithCause, the httpstore traceparent header). Each
// write's span becomes the cause of the revision it makes.
//
// Safe for concurrent use; the zero value is not usable: call New.
type Tracer struct {
	tr    trace.Tracer
	names sync.Map // controller name -> its reconciles' span name
}

// spanName returns "reconcile CONTROLLER", made once per controller.
func (t *Tracer) spanName(controller string) string {
	if n, ok := t.names.Load(controller); ok {
		return n.(string)
	}
	n, _ := t.names.LoadOrStore(controller, "reconcile "+controller)
	return n.(string)
}

var _ tracing.Tracer = (*Tracer)(nil)

// New returns a Tracer with opts.
func New(opts Options) *Tracer {
	tp := opts.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return &Tracer{tr: tp.Tracer(ScopeName)}
}

// Attribute keys of the spans.
const (
	KeyController = attribute.Key("converge.controller")
	KeyKey        = attribute.Key("converge.key")
	KeyRevision   = attribute.Key("converge.revision")
	KeyRetries    = attribute.Key("converge.retries")
	KeyDeleted    = attribute.Key("converge.deleted")
	KeyWoken      = attribute.Key("converge.woken")
	KeyCauses     = attribute.Key("converge.cause_revisions")
	KeyOutcome    = attribute.Key("converge.outcome")
	// KeyLatency is the convergence latency in seconds, from when the
	// oldest cause was observed to the reconcile's end.
	KeyLatency = attribute.Key("converge.convergence_latency_seconds")
	// KeyCauseRevision is set on a link: the revision the linked write made.
	KeyCauseRevision = attribute.Key("converge.cause_revision")
)

// StartReconcile begins the span of a reconcile (tracing.Tracer).
func (t *Tracer) StartReconcile(ctx context.Context, s tracing.ReconcileStart) (context.Context, tracing.ReconcileSpan) {
	var revs []int64
	if len(s.Causes) > 0 {
		revs = make([]int64, len(s.Causes))
	}
	var links []trace.Link
	var parent trace.SpanContext
	for i, c := range s.Causes {
		revs[i] = c.Revision
		sc, ok := SpanContextOf(c.Traceparent)
		if !ok {
			continue
		}
		if !parent.IsValid() {
			parent = sc
		}
		links = append(links, trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{KeyCauseRevision.Int64(c.Revision)}})
	}
	if parent.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
	}
	ctx, sp := t.tr.Start(ctx, t.spanName(s.Controller), trace.WithSpanKind(trace.SpanKindConsumer), trace.WithLinks(links...))
	if !sp.IsRecording() {
		return ctx, reconcileSpan{sp: sp} // not sampled: no attribute is kept
	}
	// The attributes go in with End's, in one SetAttributes: the SDK then
	// grows its list once and has nothing to deduplicate.
	attrs := make([]attribute.KeyValue, 0, 9)
	attrs = append(attrs, KeyController.String(s.Controller), KeyKey.String(s.Key), KeyRevision.Int64(s.Revision), KeyRetries.Int(s.Retries))
	if s.Deleted {
		attrs = append(attrs, KeyDeleted.Bool(true))
	}
	if len(s.Woken) > 0 {
		attrs = append(attrs, KeyWoken.StringSlice(s.Woken))
	}
	if len(revs) > 0 {
		attrs = append(attrs, KeyCauses.Int64Slice(revs))
	}
	return ctx, reconcileSpan{sp, attrs}
}

type reconcileSpan struct {
	sp    trace.Span
	attrs []attribute.KeyValue // set at End; nil if not recording
}

func (r reconcileSpan) End(e tracing.ReconcileEnd) {
	if !r.sp.IsRecording() {
		r.sp.End()
		return
	}
	attrs := append(r.attrs, KeyOutcome.String(e.Outcome))
	if e.Converged {
		attrs = append(attrs, KeyLatency.Float64(e.Latency.Seconds()))
	}
	r.sp.SetAttributes(attrs...)
	if e.Err != nil {
		r.sp.RecordError(e.Err)
		if e.Failed {
			r.sp.SetStatus(codes.Error, e.Err.Error())
		}
	}
	r.sp.End()
}

// TraceID returns the span's trace ID in hex, "" if it is not sampled.
func (r reconcileSpan) TraceID() string {
	sc := r.sp.SpanContext()
	if !sc.IsSampled() {
		return ""
	}
	return sc.TraceID().String()
}

// StartSpan begins a child span of the reconcile in ctx: a write or an
// external call (tracing.Tracer). The context it returns carries the
// span as the cause of what is written with it (store.WithCause).
func (t *Tracer) StartSpan(ctx context.Context, name, key string) (context.Context, tracing.Span) {
	ctx, sp := t.tr.Start(ctx, name)
	return ContextWithCause(ctx), childSpan{sp, key}
}

type childSpan struct {
	sp  trace.Span
	key string // set at End, with the revision
}

func (c childSpan) End(revision int64, err error) {
	if !c.sp.IsRecording() {
		c.sp.End()
		return
	}
	if revision > 0 {
		c.sp.SetAttributes(KeyKey.String(c.key), KeyRevision.Int64(revision))
	} else if c.key != "" {
		c.sp.SetAttributes(KeyKey.String(c.key))
	}
	if err != nil {
		c.sp.RecordError(err)
		c.sp.SetStatus(codes.Error, err.Error())
	}
	c.sp.End()
}

// TraceCheck returns check with each call a span named "check NAME" (a
// dependency's check, reconcile/dependency.Dependency.Check): checks run
// on an interval, outside any reconcile, so each is a trace of its own.
func (t *Tracer) TraceCheck(name string, check func(ctx context.Context) error) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		ctx, sp := t.tr.Start(ctx, "check "+name, trace.WithAttributes(attribute.String("converge.dependency", name)))
		err := check(ctx)
		childSpan{sp: sp}.End(0, err)
		return err
	}
}

// ContextWithCause returns ctx carrying the span ctx holds as the cause
// of the writes made with it (store.WithCause): a writer whose context
// holds a span, in process or through httpstore's client (which sends it
// as the traceparent header), has the reconciles its writes wake linked
// to its trace. ctx is returned as it is if it holds no valid span.
func ContextWithCause(ctx context.Context) context.Context {
	if tp := CauseOf(ctx); tp != "" {
		return store.WithCause(ctx, tp)
	}
	return ctx
}

// CauseOf returns the span ctx holds as a W3C traceparent, "" if it holds
// no valid span: httpstore.WithCauseOf(CauseOf) has a client send the
// span of every write's context as its cause.
func CauseOf(ctx context.Context) string {
	return Traceparent(trace.SpanContextFromContext(ctx))
}
