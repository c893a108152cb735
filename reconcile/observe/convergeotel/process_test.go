package convergeotel_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/observe/convergeotel"
	"github.com/converge-go/converge/reconcile/tracing"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/httpstore"
	"github.com/converge-go/converge/store/httpstore/httpstoretest"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"
)

// envController names the store URL a re-executed test binary serves as
// the controller's process.
const envController = "CONVERGEOTEL_CONTROLLER_URL"

// TestMain runs the controller's process when the test binary is
// re-executed as one; else the tests, which must leave no goroutine
// behind.
func TestMain(m *testing.M) {
	if url := os.Getenv(envController); url != "" {
		if err := controllerProcess(url, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// spanLine is a span as the controller's process reports it.
type spanLine struct {
	Name, Trace, Span, Parent string
	Links                     []string
}

// controllerProcess runs a controller over the store at url, traced into
// an in-memory exporter: it says "ready" once synced, reads the revision
// to wait for, and, once that is reconciled and the controller stopped,
// prints its spans as JSON lines.
func controllerProcess(url string, in io.Reader, out io.Writer) error {
	exp := tracetest.NewInMemoryExporter()
	c, err := httpstore.New[json.RawMessage](url)
	if err != nil {
		return err
	}
	defer c.Close()
	ctl, err := reconcile.New[json.RawMessage](c, statusReconciler(), reconcile.Options[json.RawMessage]{
		Name: "apps", Tracer: convergeotel.New(convergeotel.Options{TracerProvider: process(exp)}),
	})
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- ctl.Run(ctx) }()
	if err := ctl.WaitForSync(ctx); err != nil {
		return err
	}
	fmt.Fprintln(out, "ready")
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil {
		return err
	}
	rev, err := strconv.ParseInt(line[:len(line)-1], 10, 64)
	if err != nil {
		return err
	}
	if err := ctl.WaitForRevision(ctx, rev); err != nil {
		return err
	}
	stop()
	if err := <-done; err != nil {
		return err
	}
	enc := json.NewEncoder(out)
	for _, s := range exp.GetSpans() {
		l := spanLine{Name: s.Name, Trace: s.SpanContext.TraceID().String(), Span: s.SpanContext.SpanID().String(), Parent: s.Parent.SpanID().String()}
		for _, k := range s.Links {
			l.Links = append(l.Links, k.SpanContext.SpanID().String())
		}
		if err := enc.Encode(l); err != nil {
			return err
		}
	}
	return nil
}

// statusReconciler makes an external call and writes a status.
func statusReconciler() reconcile.Reconciler[json.RawMessage] {
	return reconcile.ReconcilerFunc[json.RawMessage](func(ctx context.Context, req reconcile.Request[json.RawMessage]) (reconcile.Result, error) {
		if req.Deleted {
			return reconcile.Result{}, nil
		}
		_, end := tracing.StartCall(ctx, "create database")
		end(nil)
		sw := req.Store.(apistore.StatusWriter[json.RawMessage])
		_, err := sw.UpdateStatus(ctx, req.Key, json.RawMessage(`{"status":{"ready":true}}`), req.Object.Revision)
		return reconcile.Result{}, err
	})
}

// TestAnApplyOverHTTPIsTheParentOfTheReconcileItWakesInAnotherProcess:
// the apply of this process and the reconcile it wakes in a controller
// process of its own, joined only by the store server's wire, are one
// trace: the reconcile's parent and link is the apply, and its external
// call and status write are its children.
func TestAnApplyOverHTTPIsTheParentOfTheReconcileItWakesInAnotherProcess(t *testing.T) {
	raw := store.NewMemory[json.RawMessage]()
	t.Cleanup(func() { _ = raw.Close() })
	served := httpstoretest.ServeLayer[json.RawMessage](t, raw, apistore.JSONKind{}, httpstoretest.Options{})
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envController+"="+served.Server.URL)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := bufio.NewScanner(stdout)
	require.True(t, lines.Scan(), "the controller's process said nothing")
	require.Equal(t, "ready", lines.Text())

	exp := tracetest.NewInMemoryExporter()
	var rev int64
	apply := userWrite(t, process(exp), "apply", func(ctx context.Context) error {
		obj, err := served.Client.Apply(ctx, "apps/a", json.RawMessage(`{"spec":{"size":3}}`))
		rev = obj.Revision
		return err
	})
	_, err = fmt.Fprintln(stdin, rev)
	require.NoError(t, err)
	spans := map[string]spanLine{}
	for lines.Scan() {
		var l spanLine
		require.NoError(t, json.Unmarshal(lines.Bytes(), &l))
		spans[l.Name] = l
	}
	require.NoError(t, cmd.Wait())

	r, ok := spans["reconcile apps"]
	require.True(t, ok, "no reconcile span among %v", spans)
	require.Equal(t, apply.TraceID().String(), r.Trace, "the reconcile is in the apply's trace")
	require.Equal(t, apply.SpanID().String(), r.Parent, "the apply is its parent")
	require.Equal(t, []string{apply.SpanID().String()}, r.Links)
	for _, name := range []string{"create database", "UpdateStatus"} {
		require.Equal(t, apply.TraceID().String(), spans[name].Trace, name)
		require.Equal(t, r.Span, spans[name].Parent, "%s is a child of the reconcile", name)
	}
}
