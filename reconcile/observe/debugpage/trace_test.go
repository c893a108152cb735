package debugpage_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/observe/debugpage"
	"github.com/converge-go/converge/reconcile/tracing"
	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// idTracer is a tracing.Tracer whose every reconcile is in trace id.
type idTracer struct{ id string }

func (t idTracer) StartReconcile(ctx context.Context, _ tracing.ReconcileStart) (context.Context, tracing.ReconcileSpan) {
	return ctx, idSpan(t)
}
func (t idTracer) StartSpan(ctx context.Context, _, _ string) (context.Context, tracing.Span) {
	return ctx, noSpan{}
}

type noSpan struct{}

func (noSpan) End(int64, error) {}

type idSpan idTracer

func (idSpan) End(tracing.ReconcileEnd) {}
func (s idSpan) TraceID() string        { return s.id }

// TestEachKeyShowsTheTraceIDOfItsLatestReconcile: with a Tracer, a key's
// row names the trace of its latest reconcile, in HTML and JSON; without
// one, it names none.
func TestEachKeyShowsTheTraceIDOfItsLatestReconcile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const id = "4bf92f3577b34da6a3ce929d0e0e4736"
		ctx := t.Context()
		s := store.NewMemory[int]()
		defer s.Close()
		ctl, err := reconcile.New[int](s, reconcile.ReconcilerFunc[int](func(context.Context, reconcile.Request[int]) (reconcile.Result, error) {
			return reconcile.Result{}, nil
		}), reconcile.Options[int]{Name: "traced", Tracer: idTracer{id}})
		require.NoError(t, err)
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- ctl.Run(runCtx) }()
		defer func() { cancel(); require.NoError(t, <-done) }()
		obj, err := s.Create(ctx, "k/a", 1)
		require.NoError(t, err)
		require.NoError(t, ctl.WaitForRevision(ctx, obj.Revision))
		synctest.Wait() // the reconcile's span has ended

		h := debugpage.New(debugpage.Options{}, ctl)
		p := getJSON(t, h, "/?format=json")
		require.Len(t, p.Controllers, 1)
		require.Len(t, p.Controllers[0].Keys, 1)
		assert.Equal(t, id, p.Controllers[0].Keys[0]["traceID"])
		assert.Contains(t, get(t, h, "/").Body.String(), `trace <code>`+id+`</code>`)
	})
}
