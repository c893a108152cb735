package convergeotel_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/observe/convergeotel"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/httpstore"
	"github.com/converge-go/converge/store/httpstore/httpstoretest"
	"github.com/converge-go/converge/store/storetest"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestAnApplyOverHTTPMakesOneTraceWithTheReconcileItWokeItsStatusWriteAndItsCall:
// a user's apply through the store server, made with a span, is the
// parent of the reconcile it wakes in a controller of another client (its
// own tracer provider: only the wire carries the trace), which links to
// it; that reconcile's external call and status write are its children:
// one trace from the apply to the status that converged it.
func TestAnApplyOverHTTPMakesOneTraceWithTheReconcileItWokeItsStatusWriteAndItsCall(t *testing.T) {
	ctx := t.Context()
	exp := tracetest.NewInMemoryExporter()
	raw := store.NewMemory[json.RawMessage]()
	t.Cleanup(func() { _ = raw.Close() })
	served := httpstoretest.ServeLayer[json.RawMessage](t, raw, apistore.JSONKind{}, httpstoretest.Options{})

	// The controller's process: a client of its own, and a tracer.
	ctlClient, err := httpstore.New[json.RawMessage](served.Server.URL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ctlClient.Close() })
	ctl, err := reconcile.New[json.RawMessage](ctlClient, statusReconciler(), reconcile.Options[json.RawMessage]{
		Name: "apps", Tracer: convergeotel.New(convergeotel.Options{TracerProvider: process(exp)}),
	})
	require.NoError(t, err)
	stop := run(t, ctl)

	// The user's process: the served client, its own tracer provider.
	var rev int64
	apply := userWrite(t, process(exp), "apply", func(ctx context.Context) error {
		obj, err := served.Client.Apply(ctx, "apps/a", json.RawMessage(`{"spec":{"size":3}}`))
		rev = obj.Revision
		return err
	})
	require.NoError(t, ctl.WaitForRevision(ctx, rev))
	stop() // every span has ended

	recs := named(exp, "reconcile apps")
	require.Len(t, recs, 1, "one reconcile")
	r := recs[0]
	require.Equal(t, apply.TraceID(), r.SpanContext.TraceID(), "the reconcile is in the apply's trace")
	require.Equal(t, apply.SpanID(), r.Parent.SpanID(), "the apply is the reconcile's parent")
	require.True(t, r.Parent.IsRemote())
	require.True(t, linksTo(r, apply), "the reconcile links to the apply")
	require.Equal(t, "apps/a", attr(r, "converge.key"))
	require.Equal(t, []int64{rev}, attr(r, "converge.cause_revisions"))
	require.Equal(t, string(reconcile.Success), attr(r, "converge.outcome"))
	require.NotNil(t, attr(r, "converge.convergence_latency_seconds"))
	for _, name := range []string{"create database", "UpdateStatus"} {
		kids := named(exp, name)
		require.Len(t, kids, 1, name)
		require.Equal(t, apply.TraceID(), kids[0].SpanContext.TraceID(), name)
		require.Equal(t, r.SpanContext.SpanID(), kids[0].Parent.SpanID(), "%s is a child of the reconcile", name)
	}
	require.Equal(t, apply.TraceID().String(), keyTrace(t, ctl, "apps/a"), "KeyState names the trace")
}

// keyTrace returns the TraceID of key's KeyState.
func keyTrace[T any](t *testing.T, ctl *reconcile.Controller[T], key string) string {
	t.Helper()
	page := ctl.Inspect(reconcile.KeyQuery{Prefix: key})
	for _, st := range page.Keys {
		if st.Key == key {
			return st.TraceID
		}
	}
	t.Fatalf("no state for %q", key)
	return ""
}

// TestAGoClientWithCauseOfJoinsItsWritesToTheSpanOfTheirContext: an
// httpstore client made with WithCauseOf(CauseOf) needs nothing more: a
// write made with a context holding a span is the cause of its revision.
func TestAGoClientWithCauseOfJoinsItsWritesToTheSpanOfTheirContext(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	raw := store.NewMemory[json.RawMessage]()
	t.Cleanup(func() { _ = raw.Close() })
	served := httpstoretest.Serve[json.RawMessage](t, raw, httpstoretest.Options{})
	c, err := httpstore.New[json.RawMessage](served.Server.URL, httpstore.WithCauseOf(convergeotel.CauseOf))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	w, err := raw.Watch(t.Context(), "", 0)
	require.NoError(t, err)
	defer w.Stop()
	ctx, sp := process(exp).Tracer("user").Start(t.Context(), "write")
	_, err = c.Create(ctx, "k", json.RawMessage(`{}`))
	require.NoError(t, err)
	sp.End()
	ev := storetest.NextEvent(t, w)
	got, ok := convergeotel.SpanContextOf(ev.Cause)
	require.True(t, ok, "cause %q", ev.Cause)
	require.Equal(t, sp.SpanContext().TraceID(), got.TraceID())
	require.Equal(t, sp.SpanContext().SpanID(), got.SpanID())
}
