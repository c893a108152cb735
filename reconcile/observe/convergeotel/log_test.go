package convergeotel_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/observe/convergeotel"
	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestLogsInsideAReconcileCarryItsTraceAndSpanIDs: with LogHandler, a
// line the reconciler logs through reconcile.LoggerFrom and the
// controller's own line about the reconcile's failure carry the trace_id
// and span_id of the reconcile's span; a line logged outside carries none.
func TestLogsInsideAReconcileCarryItsTraceAndSpanIDs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		exp := tracetest.NewInMemoryExporter()
		var buf syncBuffer
		log := slog.New(convergeotel.LogHandler(slog.NewTextHandler(&buf, nil)))
		s := store.NewMemory[int]()
		defer s.Close()
		rec := reconcile.ReconcilerFunc[int](func(ctx context.Context, req reconcile.Request[int]) (reconcile.Result, error) {
			reconcile.LoggerFrom(ctx).Info("reconciling")
			return reconcile.Result{}, reconcile.Terminal(errors.New("refused"))
		})
		ctl, err := reconcile.New[int](s, rec, reconcile.Options[int]{
			Name: "logs", Logger: log, Tracer: convergeotel.New(convergeotel.Options{TracerProvider: process(exp)}),
		})
		require.NoError(t, err)
		run(t, ctl)
		obj, err := s.Create(t.Context(), "k", 1)
		require.NoError(t, err)
		require.NoError(t, ctl.WaitForRevision(t.Context(), obj.Revision))
		synctest.Wait() // the reconcile's span has ended
		log.Info("outside")

		r := named(exp, "reconcile logs")
		require.Len(t, r, 1)
		ids := "trace_id=" + r[0].SpanContext.TraceID().String() + " span_id=" + r[0].SpanContext.SpanID().String()
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		var in, failed, out string
		for _, l := range lines {
			switch {
			case strings.Contains(l, "msg=reconciling"):
				in = l
			case strings.Contains(l, "terminally"):
				failed = l
			case strings.Contains(l, "msg=outside"):
				out = l
			}
		}
		require.Contains(t, in, ids)
		require.Contains(t, failed, ids)
		require.NotEmpty(t, out)
		require.NotContains(t, out, "trace_id=")
	})
}

// TestADependencyCheckIsASpanWithItsError: TraceCheck makes each call of
// a check a span of its own, named for the dependency, with the error of
// a failed check.
func TestADependencyCheckIsASpanWithItsError(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr := convergeotel.New(convergeotel.Options{TracerProvider: process(exp)})
	fail := errors.New("connection refused")
	check := tr.TraceCheck("postgres", func(ctx context.Context) error { return fail })
	require.ErrorIs(t, check(t.Context()), fail)
	spans := named(exp, "check postgres")
	require.Len(t, spans, 1)
	require.Equal(t, "postgres", attr(spans[0], "converge.dependency"))
	require.Equal(t, "connection refused", spans[0].Status.Description)
}

// syncBuffer is a bytes.Buffer safe for the controller's goroutines.
type syncBuffer struct {
	mu  chan struct{}
	buf bytes.Buffer
}

func (b *syncBuffer) lock() {
	if b.mu == nil {
		b.mu = make(chan struct{}, 1)
	}
	b.mu <- struct{}{}
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.lock()
	defer func() { <-b.mu }()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.lock()
	defer func() { <-b.mu }()
	return b.buf.String()
}
