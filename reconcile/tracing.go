package reconcile

import (
	"context"
	"log/slog"

	"github.com/converge-go/converge/reconcile/tracing"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// traceBegin starts the span of t's reconcile (Options.Tracer is set),
// with the key's uncovered causes, and has the reconcile's writes traced.
// It returns the context the reconciler is given.
func (t *turn[T]) traceBegin(ctx context.Context) context.Context {
	c := t.c
	c.mu.Lock()
	causes := c.led.causesOf(t.req.Key)
	c.mu.Unlock()
	ctx, t.span = c.opts.Tracer.StartReconcile(ctx, tracing.ReconcileStart{
		Controller: c.opts.Name, Key: t.req.Key, Revision: t.req.Object.Revision,
		Retries: t.req.Retries, Deleted: t.req.Deleted, Woken: c.triggerNamesOf(t.why),
		Causes: causes,
	})
	ctx = tracing.WithReconcile(ctx, c.opts.Tracer, t.req.Key) // for tracing.StartCall
	if w, ok := t.req.Store.(fullWriter[T]); ok {
		t.req.Store = tracedWriter[T]{fullWriter: w, tr: c.opts.Tracer}
	}
	return ctx
}

// traceEnd ends the span of t's reconcile, once settled: a settled
// reconcile covers its causes, and the span's trace becomes the key's
// latest (KeyState.TraceID).
func (t *turn[T]) traceEnd() {
	c := t.c
	id := t.span.TraceID()
	c.mu.Lock()
	c.led.tracedEnded(ending{key: t.req.Key, revision: t.req.Object.Revision, stores: t.b.stores, outcome: Outcome(t.ended.Outcome)}, id)
	c.mu.Unlock()
	t.span.End(t.ended)
}

// fullWriter is what Request.Store is (writer, guardedWriter): a store
// with the API-server layer's writes and Check.
type fullWriter[T any] interface {
	store.Store[T]
	store.Checker
	apistore.StatusWriter[T]
	apistore.Replacer[T]
	apistore.PropagatingDeleter
}

var (
	_ fullWriter[int] = (*writer[int])(nil)
	_ fullWriter[int] = guardedWriter[int]{}
	_ fullWriter[int] = tracedWriter[int]{}
)

// tracedWriter is Request.Store of a traced reconcile: every write is a
// span of the Tracer, made with the context the Tracer returns (which may
// carry the write's cause, store.WithCause). Reads and Check are not
// traced.
type tracedWriter[T any] struct {
	fullWriter[T]
	tr tracing.Tracer
}

func (w tracedWriter[T]) Create(ctx context.Context, key string, value T, guards ...store.Guard) (store.Object[T], error) {
	ctx, sp := w.tr.StartSpan(ctx, "Create", key)
	obj, err := w.fullWriter.Create(ctx, key, value, guards...)
	sp.End(obj.Revision, err)
	return obj, err
}

func (w tracedWriter[T]) Update(ctx context.Context, key string, value T, revision int64, guards ...store.Guard) (store.Object[T], error) {
	ctx, sp := w.tr.StartSpan(ctx, "Update", key)
	obj, err := w.fullWriter.Update(ctx, key, value, revision, guards...)
	sp.End(obj.Revision, err)
	return obj, err
}

func (w tracedWriter[T]) Replace(ctx context.Context, key string, value T, revision int64, guards ...store.Guard) (store.Object[T], bool, error) {
	ctx, sp := w.tr.StartSpan(ctx, "Update", key)
	obj, deleted, err := w.fullWriter.Replace(ctx, key, value, revision, guards...)
	sp.End(obj.Revision, err)
	return obj, deleted, err
}

func (w tracedWriter[T]) UpdateStatus(ctx context.Context, key string, value T, revision int64, guards ...store.Guard) (store.Object[T], error) {
	ctx, sp := w.tr.StartSpan(ctx, "UpdateStatus", key)
	obj, err := w.fullWriter.UpdateStatus(ctx, key, value, revision, guards...)
	sp.End(obj.Revision, err)
	return obj, err
}

func (w tracedWriter[T]) Delete(ctx context.Context, key string, revision int64, guards ...store.Guard) (int64, error) {
	ctx, sp := w.tr.StartSpan(ctx, "Delete", key)
	rev, err := w.fullWriter.Delete(ctx, key, revision, guards...)
	sp.End(rev, err)
	return rev, err
}

func (w tracedWriter[T]) DeleteWith(ctx context.Context, key string, revision int64, p apistore.Propagation, guards ...store.Guard) (int64, bool, error) {
	ctx, sp := w.tr.StartSpan(ctx, "Delete", key)
	rev, marked, err := w.fullWriter.DeleteWith(ctx, key, revision, p, guards...)
	sp.End(rev, err)
	return rev, marked, err
}

// boundHandler hands its records to a Handler with ctx, a traced
// reconcile's context, when they were logged without one (slog's Info,
// Warn, ... pass context.Background): a handler that reads the span from
// the context (convergeotel.LogHandler) finds the reconcile's.
type boundHandler struct {
	slog.Handler
	ctx context.Context
}

func (b boundHandler) bound(ctx context.Context) context.Context {
	if ctx == nil || ctx == context.Background() {
		return b.ctx
	}
	return ctx
}

func (b boundHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return b.Handler.Enabled(b.bound(ctx), l)
}

func (b boundHandler) Handle(ctx context.Context, r slog.Record) error {
	return b.Handler.Handle(b.bound(ctx), r)
}

func (b boundHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return boundHandler{b.Handler.WithAttrs(attrs), b.ctx}
}

func (b boundHandler) WithGroup(name string) slog.Handler {
	return boundHandler{b.Handler.WithGroup(name), b.ctx}
}
