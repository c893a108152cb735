package convergeotel_test

import (
	"context"
	"sync"
	"testing"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/observe/convergeotel"
	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// process is one process's tracing: a provider of its own, exporting to
// an in-memory exporter shared by the test (as a collector would be).
func process(exp *tracetest.InMemoryExporter) *sdktrace.TracerProvider {
	return sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSampler(sdktrace.AlwaysSample()))
}

// userWrite runs write inside a span named name of tp, with the span as
// the write's cause, and returns the span's context.
func userWrite(t *testing.T, tp trace.TracerProvider, name string, write func(ctx context.Context) error) trace.SpanContext {
	t.Helper()
	ctx, sp := tp.Tracer("user").Start(context.Background(), name)
	require.NoError(t, write(convergeotel.ContextWithCause(ctx)))
	sp.End()
	return sp.SpanContext()
}

// run runs ctl until the test ends or the returned stop is called,
// which returns once Run has: every reconcile's span has then ended.
func run[T any](t *testing.T, ctl *reconcile.Controller[T]) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctl.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			require.NoError(t, <-done)
		})
	}
	t.Cleanup(stop)
	require.NoError(t, ctl.WaitForSync(t.Context()))
	return stop
}

// named returns the ended spans called name, in the order they ended.
func named(exp *tracetest.InMemoryExporter, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// linksTo reports whether s links to sc.
func linksTo(s tracetest.SpanStub, sc trace.SpanContext) bool {
	for _, l := range s.Links {
		if l.SpanContext.TraceID() == sc.TraceID() && l.SpanContext.SpanID() == sc.SpanID() {
			return true
		}
	}
	return false
}

// attr returns the value of s's attribute key.
func attr(s tracetest.SpanStub, key string) any {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.AsInterface()
		}
	}
	return nil
}

var _ = store.WithCause
