package tracing_test

import (
	"context"
	"testing"

	"github.com/converge-go/converge/reconcile/tracing"
)

// TestWithoutATracerStartCallCostsNothing: StartCall outside a traced
// reconcile returns its context and allocates nothing.
func TestWithoutATracerStartCallCostsNothing(t *testing.T) {
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		got, end := tracing.StartCall(ctx, "call")
		end(nil)
		if got != ctx {
			t.Fatal("StartCall changed the context")
		}
	})
	if allocs != 0 {
		t.Fatalf("StartCall allocated %v times", allocs)
	}
}

// recorder is a Tracer that records the spans StartSpan begins.
type recorder struct{ spans []string }

func (r *recorder) StartReconcile(ctx context.Context, _ tracing.ReconcileStart) (context.Context, tracing.ReconcileSpan) {
	return ctx, nil
}

func (r *recorder) StartSpan(ctx context.Context, name, key string) (context.Context, tracing.Span) {
	r.spans = append(r.spans, key+" "+name)
	return ctx, span{}
}

type span struct{}

func (span) End(int64, error) {}

// TestInsideATracedReconcileStartCallBeginsASpanOfItsKey: a context the
// loop marked with WithReconcile has StartCall begin a span with the
// reconcile's Tracer, named for the call and the reconcile's key.
func TestInsideATracedReconcileStartCallBeginsASpanOfItsKey(t *testing.T) {
	r := &recorder{}
	ctx := tracing.WithReconcile(context.Background(), r, "roles/app")
	_, end := tracing.StartCall(ctx, "create role")
	end(nil)
	if len(r.spans) != 1 || r.spans[0] != "roles/app create role" {
		t.Fatalf("spans %q, want one for roles/app's create role", r.spans)
	}
}
