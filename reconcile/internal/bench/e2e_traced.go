package bench

import (
	"context"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/observe/convergeotel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// RunConvergeTraced is RunConvergeOwnWrites with every reconcile traced:
// reconcile.Options.Tracer from convergeotel over an OpenTelemetry SDK
// provider that samples every span and hands them, in batches, to an
// exporter that discards them (the SDK's cost, not a collector's). Each
// reconcile makes two spans: its own and its status write's.
func RunConvergeTraced(s E2EStore, keys []string, workers int) (E2EResult, error) {
	return runConvergeTraced(s, keys, workers, sdktrace.AlwaysSample())
}

// RunConvergeTracedOnePercent is RunConvergeTraced with one trace in a
// hundred sampled (sdktrace.TraceIDRatioBased(0.01) under ParentBased).
func RunConvergeTracedOnePercent(s E2EStore, keys []string, workers int) (E2EResult, error) {
	return runConvergeTraced(s, keys, workers, sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.01)))
}

func runConvergeTraced(s E2EStore, keys []string, workers int, sampler sdktrace.Sampler) (E2EResult, error) {
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSampler(sampler),
		sdktrace.WithBatcher(tracetest.NewNoopExporter()),
	)
	defer func() { _ = tp.Shutdown(context.Background()) }()
	tr := convergeotel.New(convergeotel.Options{TracerProvider: tp})
	return runConverge(s, keys, workers, true, convergeHooks{options: func(o *reconcile.Options[*Pair]) {
		o.Tracer = tr
	}})
}
