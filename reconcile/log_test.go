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
