package convergeotel_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/observe/convergeotel"
	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestARetriedKeyShowsEachRetryAsASpanLinkedToTheSameCause: a key whose
// reconcile fails twice before it succeeds makes three reconcile spans,
// each in the writer's trace, each linked to the write, with retries 0, 1
// and 2 and the outcome of each; only the last converged.
func TestARetriedKeyShowsEachRetryAsASpanLinkedToTheSameCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		exp := tracetest.NewInMemoryExporter()
		s := store.NewMemory[int]()
		defer s.Close()
		calls := 0
		rec := reconcile.ReconcilerFunc[int](func(ctx context.Context, req reconcile.Request[int]) (reconcile.Result, error) {
			calls++
			if calls < 3 {
				return reconcile.Result{}, errors.New("the world is not ready")
			}
			return reconcile.Result{}, nil
		})
		ctl, err := reconcile.New[int](s, rec, reconcile.Options[int]{
			Name: "retry", Tracer: convergeotel.New(convergeotel.Options{TracerProvider: process(exp)}),
		})
		require.NoError(t, err)
		run(t, ctl)
		var rev int64
		write := userWrite(t, process(exp), "write", func(ctx context.Context) error {
			obj, err := s.Create(ctx, "k", 1)
			rev = obj.Revision
			return err
		})
		require.NoError(t, ctl.WaitForRevision(t.Context(), rev))
		synctest.Wait() // the reconcile's span has ended

		recs := named(exp, "reconcile retry")
		require.Len(t, recs, 3)
		for i, r := range recs {
			require.Equal(t, write.TraceID(), r.SpanContext.TraceID(), "reconcile %d", i)
			require.Equal(t, write.SpanID(), r.Parent.SpanID(), "reconcile %d", i)
			require.True(t, linksTo(r, write), "reconcile %d links to the write", i)
			require.Equal(t, int64(i), attr(r, "converge.retries"), "reconcile %d", i)
			require.Equal(t, []int64{rev}, attr(r, "converge.cause_revisions"), "reconcile %d", i)
		}
		require.Equal(t, string(reconcile.Failure), attr(recs[0], "converge.outcome"))
		require.Equal(t, string(reconcile.Success), attr(recs[2], "converge.outcome"))
		require.Nil(t, attr(recs[1], "converge.convergence_latency_seconds"))
		require.NotNil(t, attr(recs[2], "converge.convergence_latency_seconds"))
	})
}

// TestAChangeThatSupersedesAnotherBeforeItWasReconciledLinksBoth: two
// writes of one key, each with its own trace, both observed before the
// key's reconcile, make one reconcile linked to both, in the first's trace;
// the next change of the key links only to its own writer.
func TestAChangeThatSupersedesAnotherBeforeItWasReconciledLinksBoth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		exp := tracetest.NewInMemoryExporter()
		s := store.NewMemory[int]()
		defer s.Close()
		started, release := make(chan struct{}), make(chan struct{})
		rec := reconcile.ReconcilerFunc[int](func(ctx context.Context, req reconcile.Request[int]) (reconcile.Result, error) {
			if req.Key == "block" {
				close(started)
				<-release
			}
			return reconcile.Result{}, nil
		})
		ctl, err := reconcile.New[int](s, rec, reconcile.Options[int]{
			Name: "supersede", Workers: 1, Tracer: convergeotel.New(convergeotel.Options{TracerProvider: process(exp)}),
		})
		require.NoError(t, err)
		run(t, ctl)
		_, err = s.Create(t.Context(), "block", 0)
		require.NoError(t, err)
		<-started // the only worker is busy
		user := process(exp)
		var obj store.Object[int]
		first := userWrite(t, user, "first", func(ctx context.Context) (err error) {
			obj, err = s.Create(ctx, "k", 1)
			return err
		})
		second := userWrite(t, user, "second", func(ctx context.Context) (err error) {
			obj, err = s.Update(ctx, "k", 2, obj.Revision)
			return err
		})
		synctest.Wait() // both changes observed
		close(release)
		require.NoError(t, ctl.WaitForRevision(t.Context(), obj.Revision))
		synctest.Wait() // the reconcile's span has ended

		var ofK []tracetest.SpanStub
		for _, r := range named(exp, "reconcile supersede") {
			if attr(r, "converge.key") == "k" {
				ofK = append(ofK, r)
			}
		}
		require.Len(t, ofK, 1, "one reconcile of k")
		r := ofK[0]
		require.True(t, linksTo(r, first), "linked to the superseded write")
		require.True(t, linksTo(r, second), "linked to the write that superseded it")
		require.Equal(t, first.SpanID(), r.Parent.SpanID(), "in the oldest cause's trace")
		require.Equal(t, []int64{obj.Revision - 1, obj.Revision}, attr(r, "converge.cause_revisions"))

		third := userWrite(t, user, "third", func(ctx context.Context) (err error) {
			obj, err = s.Update(ctx, "k", 3, obj.Revision)
			return err
		})
		require.NoError(t, ctl.WaitForRevision(t.Context(), obj.Revision))
		synctest.Wait() // the reconcile's span has ended
		last := named(exp, "reconcile supersede")
		r = last[len(last)-1]
		require.Len(t, r.Links, 1, "the covered causes are gone")
		require.True(t, linksTo(r, third))
	})
}
