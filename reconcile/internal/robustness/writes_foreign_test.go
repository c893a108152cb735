package robustness_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/stretchr/testify/require"
)

// TestForeignStatusWriteWakesAKeyInBackoffOnEveryBackend: a key that wrote
// its status and failed waits out an hour of backoff, yet a status written
// by another program directly on the store wakes it at once, on every
// backend: only the controller's own writes are kept from waking a key.
func TestForeignStatusWriteWakesAKeyInBackoffOnEveryBackend(t *testing.T) {
	const foreignReady = 100
	for _, b := range chaosBackends() {
		t.Run(b.name, func(t *testing.T) {
			s, _ := b.open(t, 100)
			ctx := t.Context()
			_, err := writeSpec(ctx, s, "job", 1)
			require.NoError(t, err)

			var mu sync.Mutex
			var seen []int // Status.Ready each reconcile was given
			rec := reconcile.ReconcilerFunc[*replicaSet](func(ctx context.Context, req reconcile.Request[*replicaSet]) (reconcile.Result, error) {
				ready := req.Object.Value.Status.Ready
				if ready < foreignReady {
					if _, err := bumpReady(ctx, req); err != nil {
						return reconcile.Result{}, fmt.Errorf("status write: %w", err)
					}
				}
				mu.Lock()
				seen = append(seen, ready)
				mu.Unlock()
				return reconcile.Result{}, errors.New("failing")
			})
			c, err := reconcile.New[*replicaSet](s, rec, reconcile.Options[*replicaSet]{
				Name:              "foreign",
				RateLimiter:       queue.NewExponential[string](time.Hour, time.Hour, 0),
				HeartbeatInterval: b.heartbeat,
			})
			require.NoError(t, err)
			startController(t, c)
			count := func() int { mu.Lock(); defer mu.Unlock(); return len(seen) }
			waitFor(t, func() bool { return count() >= 1 }, "the key was never reconciled")
			require.Equal(t, 1, count(), "the key in backoff was reconciled again before any foreign write")

			// Another program writes the status, behind the controller.
			obj, err := s.Get(ctx, "job")
			require.NoError(t, err)
			require.Equal(t, 1, obj.Value.Status.Ready, "the reconcile's own status write")
			foreign, err := resource.WriteStatus(ctx, s, obj, rsStatus{Ready: foreignReady})
			require.NoError(t, err)
			start := time.Now()
			waitFor(t, func() bool { return count() >= 2 }, "a foreign status write did not wake a key in an hour's backoff")
			t.Logf("%s: the foreign write at revision %d woke the key after %v", b.name, foreign.Revision, time.Since(start))
			mu.Lock()
			defer mu.Unlock()
			require.Equal(t, []int{0, foreignReady}, seen, "the second reconcile got the foreign status")
		})
	}
}
