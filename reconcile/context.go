package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/converge-go/converge/reconcile/tracing"
)

// logFailure logs a reconcile's failure at level, with the stack of a
// panic, on the reconcile's logger (LoggerFrom).
func (c *Controller[T]) logFailure(ctx context.Context, level slog.Level, msg string, err error, args ...any) {
	log := LoggerFrom(ctx)
	if !log.Enabled(ctx, level) {
		return
	}
	args = append(args, "error", err)
	var pe *PanicError
	if errors.As(err, &pe) {
		args = append(args, "stack", string(pe.Stack))
	}
	log.Log(ctx, level, msg, args...)
}

// info is what a reconcile's context carries about it, in 48 bytes, so
// that a reconcile's context (reconcileContext) is 64: what is the same
// for every reconcile of a controller is behind one pointer.
type info struct {
	ctl      *controllerInfo
	key      string
	revision int64
	id       uint64
	retries  int32
	batch    int32 // the keys of a ReconcileBatch call; 0 for one key
}

// controllerInfo is what every reconcile's info of one controller shares.
type controllerInfo struct {
	name   string
	base   *slog.Logger
	tracer tracing.Tracer // Options.Tracer, for LoggerFrom; nil for none
}

type infoKey struct{}

// contextChunk hands out a worker's reconcile contexts from chunks of
// contextChunkSize, one allocation per chunk instead of one per reconcile.
// Each context is handed out once and never reused, so a reconciler may
// keep its context (in a goroutine it started) as long as it likes: it
// only keeps its chunk alive. Not safe for concurrent use: one per worker.
type contextChunk struct{ free []reconcileContext }

const contextChunkSize = 64

func (cc *contextChunk) next() *reconcileContext {
	if len(cc.free) == 0 {
		cc.free = make([]reconcileContext, contextChunkSize)
	}
	rc := &cc.free[0]
	cc.free = cc.free[1:]
	return rc
}

// reconcileContext carries a reconcile's info in one allocation (instead of
// a context.WithValue and the info it points to).
type reconcileContext struct {
	context.Context
	info info
}

// Value returns the reconcile's info for infoKey, else defers to the parent.
func (c *reconcileContext) Value(key any) any {
	if key == (infoKey{}) {
		return &c.info
	}
	return c.Context.Value(key)
}

// reconcileID returns the reconcile ID carried by a Reconcile call's
// context (unique within the controller; "" outside a reconcile): the
// reconcile_id of LoggerFrom's logger.
func reconcileID(ctx context.Context) string {
	in, _ := ctx.Value(infoKey{}).(*info)
	if in == nil {
		return ""
	}
	return fmt.Sprintf("%s-%d", in.ctl.name, in.id)
}

// LoggerFrom returns a logger for a Reconcile call, with attributes
// controller, key, revision, retries and reconcile_id (in a ReconcileBatch
// call: controller, batch_size and reconcile_id); outside a reconcile
// it returns a logger that discards. It is built on demand, so a reconcile
// that does not log pays nothing for it. With Options.Tracer, a single
// key's reconcile's lines logged without a context (Info, not InfoContext)
// are handled with ctx, so that a handler finds the reconcile's span
// there; a batch has no reconcile span, and its lines are left as logged.
func LoggerFrom(ctx context.Context) *slog.Logger {
	in, _ := ctx.Value(infoKey{}).(*info)
	if in == nil {
		return slog.New(slog.DiscardHandler)
	}
	base := in.ctl.base
	if in.ctl.tracer != nil && in.batch == 0 { // a batch has no reconcile span of its own
		base = slog.New(boundHandler{base.Handler(), ctx})
	}
	if in.batch > 0 {
		return base.With("batch_size", in.batch, "reconcile_id", reconcileID(ctx))
	}
	return base.With("key", in.key, "revision", in.revision, "retries", in.retries, "reconcile_id", reconcileID(ctx))
}
