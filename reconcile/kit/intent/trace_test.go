package intent_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/intent"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/reconcile/tracing"
	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// callTracer records the spans a reconcile's calls begin.
type callTracer struct {
	mu    sync.Mutex
	spans []string
}

func (t *callTracer) StartReconcile(ctx context.Context, _ tracing.ReconcileStart) (context.Context, tracing.ReconcileSpan) {
	return ctx, noReconcileSpan{}
}

func (t *callTracer) StartSpan(ctx context.Context, name, key string) (context.Context, tracing.Span) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.spans = append(t.spans, name+" "+key)
	return ctx, noSpan{}
}

type noReconcileSpan struct{}

func (noReconcileSpan) End(tracing.ReconcileEnd) {}
func (noReconcileSpan) TraceID() string          { return "" }

type noSpan struct{}

func (noSpan) End(int64, error) {}

// TestInATracedReconcileFindAndActAreSpans: Step's calls of the world
// (Find, Act) inside a reconcile of a controller with a Tracer are spans
// of that reconcile, beside its writes.
func TestInATracedReconcileFindAndActAreSpans(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := store.NewMemory[*backup]()
		defer s.Close()
		world := &dumps{taken: map[string]string{}}
		once := intent.ForResource[backupSpec](func(st *backupStatus) *intent.Record[string] { return &st.Dump })
		once.Find, once.Act = world.find, world.take
		tr := &callTracer{}
		rec := reconcile.ReconcilerFunc[*backup](func(ctx context.Context, req reconcile.Request[*backup]) (reconcile.Result, error) {
			if req.Deleted {
				return reconcile.Result{}, nil
			}
			out, err := once.Step(ctx, req.Store, req.Object)
			return reconcile.Result{Requeue: out.Next}, err
		})
		c, err := reconcile.New(s, rec, reconcile.Options[*backup]{Name: "backups", Tracer: tr})
		require.NoError(t, err)
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- c.Run(runCtx) }()
		defer func() { cancel(); require.NoError(t, <-done) }()
		obj, err := resource.PutSpec(ctx, s, "backups/app", backupSpec{Database: "app"})
		require.NoError(t, err)
		require.NoError(t, c.WaitForRevision(ctx, obj.Revision))
		synctest.Wait()
		tr.mu.Lock()
		defer tr.mu.Unlock()
		require.Contains(t, tr.spans, "intent find backups/app")
		require.Contains(t, tr.spans, "intent act backups/app")
	})
}
