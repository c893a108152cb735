package reconcile

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/converge-go/converge/reconcile/tracing"
	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// countingTracer is a Tracer that counts what it is told.
type countingTracer struct {
	mu      sync.Mutex
	starts  []tracing.ReconcileStart
	ends    []tracing.ReconcileEnd
	spans   []string
	traceID string
}

func (t *countingTracer) StartReconcile(ctx context.Context, s tracing.ReconcileStart) (context.Context, tracing.ReconcileSpan) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.starts = append(t.starts, s)
	return ctx, countingSpan{t}
}

func (t *countingTracer) StartSpan(ctx context.Context, name, key string) (context.Context, tracing.Span) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.spans = append(t.spans, name+" "+key)
	return ctx, childSpan{}
}

type childSpan struct{}

func (childSpan) End(int64, error) {}

type countingSpan struct{ t *countingTracer }

func (s countingSpan) End(e tracing.ReconcileEnd) {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	s.t.ends = append(s.t.ends, e)
}
func (s countingSpan) TraceID() string { return s.t.traceID }

// BenchmarkReconcileLoopTraced is BenchmarkReconcileLoop with a Tracer
// that records nothing but counts: the loop's own cost of tracing.
func BenchmarkReconcileLoopTraced(b *testing.B) {
	benchReconcileLoop(b, Options[int]{Tracer: &countingTracer{traceID: "t"}})
}

// TestTracedKeysLeaveNothingInTheTraceTableOnceDeleted: the causes and
// trace IDs a Tracer's controller keeps per key go with the key: after
// 100 keys are created, reconciled, deleted and reconciled again, the
// table is empty; while they live, each holds its latest trace ID only.
func TestTracedKeysLeaveNothingInTheTraceTableOnceDeleted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := store.NewMemory[int]()
		defer s.Close()
		tr := &countingTracer{traceID: "trace"}
		c, err := New(s, ReconcilerFunc[int](func(context.Context, Request[int]) (Result, error) {
			return Result{}, nil
		}), Options[int]{Name: "traced", Tracer: tr})
		require.NoError(t, err)
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- c.Run(runCtx) }()
		defer func() { cancel(); require.NoError(t, <-done) }()
		require.NoError(t, c.WaitForSync(ctx))
		cause := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		var objs []store.Object[int]
		var rev int64
		for i := range 100 {
			obj, err := s.Create(store.WithCause(ctx, cause), fmt.Sprintf("k/%03d", i), i)
			require.NoError(t, err)
			objs, rev = append(objs, obj), obj.Revision
		}
		require.NoError(t, c.WaitForRevision(ctx, rev))
		synctest.Wait() // every reconcile's span has ended
		c.mu.Lock()
		require.Len(t, c.led.traces, 100)
		for _, kt := range c.led.traces {
			require.Empty(t, kt.causes, "covered causes are gone")
			require.Equal(t, "trace", kt.last)
		}
		c.mu.Unlock()
		for _, obj := range objs {
			rev, err = s.Delete(ctx, obj.Key, obj.Revision)
			require.NoError(t, err)
		}
		require.NoError(t, c.WaitForRevision(ctx, rev))
		synctest.Wait()
		c.mu.Lock()
		require.Empty(t, c.led.traces, "deleted keys left trace entries")
		c.mu.Unlock()
		tr.mu.Lock()
		defer tr.mu.Unlock()
		require.Len(t, tr.starts, 200)
		require.Equal(t, []tracing.Cause{{Revision: 1, Traceparent: cause, Seen: tr.starts[0].Causes[0].Seen}}, tr.starts[0].Causes)
	})
}

// batchWorld converges every key of a batch at once.
type batchWorld struct{}

func (batchWorld) Reconcile(context.Context, Request[int]) (Result, error) { return Result{}, nil }
func (batchWorld) ReconcileBatch(_ context.Context, reqs []Request[int]) []BatchResult {
	return make([]BatchResult, len(reqs))
}

// TestABatchingControllerWithATracerKeepsNoCauses: ReconcileBatch calls
// are not traced, so a batching controller with a Tracer records no
// cause that nothing would cover.
func TestABatchingControllerWithATracerKeepsNoCauses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := store.NewMemory[int]()
		defer s.Close()
		c, err := New(s, batchWorld{}, Options[int]{Name: "batches", BatchSize: 4, Tracer: &countingTracer{}})
		require.NoError(t, err)
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- c.Run(runCtx) }()
		defer func() { cancel(); require.NoError(t, <-done) }()
		require.NoError(t, c.WaitForSync(ctx))
		var rev int64
		for i := range 20 {
			obj, err := s.Create(store.WithCause(ctx, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"), fmt.Sprint("k/", i), i)
			require.NoError(t, err)
			rev = obj.Revision
		}
		require.NoError(t, c.WaitForRevision(ctx, rev))
		synctest.Wait()
		c.mu.Lock()
		defer c.mu.Unlock()
		require.Empty(t, c.led.traces)
	})
}
