package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/internal/syncbuf"
	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// jsonLines parses the JSON log lines written to buf.
func jsonLines(buf *syncbuf.Buffer) []map[string]any {
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// Every log line of a reconcile carries the controller, key, revision,
// retries and reconcile ID, whether the reconciler or the controller wrote it.
func TestLogLinesCarryReconcileAttributes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		rev := put(t, s, "a", &item{})
		var buf syncbuf.Buffer
		logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		var mu sync.Mutex
		var ids []string
		rec := ReconcilerFunc[*item](func(ctx context.Context, req Request[*item]) (Result, error) {
			mu.Lock()
			ids = append(ids, reconcileID(ctx))
			n := len(ids)
			mu.Unlock()
			LoggerFrom(ctx).Info("acting")
			if n == 1 {
				return Result{}, errors.New("boom")
			}
			return Result{}, nil
		})
		c, err := New(s, rec, Options[*item]{Name: "web", Logger: logger,
			RateLimiter: queue.NewExponential[string](time.Second, time.Minute, 0)})
		require.NoError(t, err)
		stop := start(t, c)
		advance(time.Minute)
		stop()

		mu.Lock()
		require.Len(t, ids, 2)
		require.NotEqual(t, ids[0], ids[1], "reconcile IDs must be unique")
		require.True(t, strings.HasPrefix(ids[0], "web-"))
		mu.Unlock()
		var acting, failed int
		for _, l := range jsonLines(&buf) {
			require.Equal(t, "web", l["controller"], "line without controller: %v", l)
			switch l["msg"] {
			case "acting", "reconcile failed; backing off":
				require.Equal(t, "a", l["key"])
				require.Equal(t, float64(rev), l["revision"])
				require.Contains(t, ids, l["reconcile_id"])
				require.Contains(t, l, "retries")
				if l["msg"] == "acting" {
					acting++
				} else {
					failed++
					require.Equal(t, "boom", l["error"])
				}
			}
		}
		require.Equal(t, 2, acting)
		require.Equal(t, 1, failed)
		require.Empty(t, reconcileID(context.Background()))
		LoggerFrom(context.Background()).Info("discarded") // outside a reconcile: no panic, no output
	})
}

// ctxHandler records the context each record was handled with.
type ctxHandler struct {
	slog.Handler
	got *[]context.Context
}

func (h ctxHandler) Handle(ctx context.Context, r slog.Record) error {
	*h.got = append(*h.got, ctx)
	return nil
}

func (h ctxHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h ctxHandler) WithAttrs([]slog.Attr) slog.Handler { return h }

// TestWithATracerOnlyASingleKeysReconcileBindsItsContextToItsLogLines:
// with Options.Tracer, a line a reconcile logs without a context reaches
// the handler with the reconcile's context (where its span is); a
// ReconcileBatch call has no span of its own, and its lines reach the
// handler as logged.
func TestWithATracerOnlyASingleKeysReconcileBindsItsContextToItsLogLines(t *testing.T) {
	var got []context.Context
	ctl := &controllerInfo{name: "c", base: slog.New(ctxHandler{slog.DiscardHandler, &got}), tracer: &countingTracer{}}
	single := &reconcileContext{Context: t.Context(), info: info{ctl: ctl, key: "k", id: 1}}
	batch := &reconcileContext{Context: t.Context(), info: info{ctl: ctl, batch: 2, id: 2}}
	LoggerFrom(single).Info("one key")
	LoggerFrom(batch).Info("a batch")
	require.Len(t, got, 2)
	require.Same(t, single, got[0])
	require.Equal(t, context.Background(), got[1])
}
