package robustness_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// TestNoReconcileSeesAnObjectOlderThanItsOwnWriteOnEveryBackend runs over
// a thousand rounds per backend of a reconcile that writes status through
// req.Store and asks to run again a millisecond later, on several keys at
// once: no reconcile may be given an object older than the one the
// previous reconcile of its key wrote (before the fix, most rounds on bolt
// were, as the cache lags the write). The object handed over must be the
// written one, status included. The in-memory store's cache does not lag
// on its own, so it also runs with its watch delayed.
func TestNoReconcileSeesAnObjectOlderThanItsOwnWriteOnEveryBackend(t *testing.T) {
	const keys, rounds = 4, 300
	for _, b := range lagBackends(2 * time.Millisecond) {
		t.Run(b.name, func(t *testing.T) {
			s := b.open(t)
			ctx := t.Context()
			for k := range keys {
				_, err := writeSpec(ctx, s, fmt.Sprintf("job-%d", k), 1)
				require.NoError(t, err)
			}

			type last struct {
				rev   int64
				ready int
			}
			var mu sync.Mutex
			written := map[string]last{}
			done := map[string]int{}
			stale, wrongStatus, total := 0, 0, 0
			var firstStale string
			rec := reconcile.ReconcilerFunc[*replicaSet](func(ctx context.Context, req reconcile.Request[*replicaSet]) (reconcile.Result, error) {
				mu.Lock()
				w := written[req.Key]
				total++
				switch {
				case req.Object.Revision < w.rev:
					stale++
					if firstStale == "" {
						firstStale = fmt.Sprintf("%s: given revision %d after writing %d", req.Key, req.Object.Revision, w.rev)
					}
				case req.Object.Revision == w.rev && req.Object.Value.Status.Ready != w.ready:
					wrongStatus++
				}
				n := done[req.Key]
				mu.Unlock()
				if n >= rounds {
					return reconcile.Result{}, nil
				}
				obj, err := bumpReady(ctx, req)
				if err != nil {
					return reconcile.Result{}, fmt.Errorf("status write: %w", err)
				}
				mu.Lock()
				written[req.Key] = last{rev: obj.Revision, ready: obj.Value.Status.Ready}
				done[req.Key]++
				mu.Unlock()
				return reconcile.Result{RequeueAfter: time.Millisecond}, nil
			})
			c, err := reconcile.New[*replicaSet](s, rec, reconcile.Options[*replicaSet]{
				Name:              "stale",
				Workers:           keys,
				RateLimiter:       queue.NewExponential[string](time.Millisecond, 10*time.Millisecond, 0),
				HeartbeatInterval: b.heartbeat,
			})
			require.NoError(t, err)
			start := time.Now()
			stop := startController(t, c)
			waitFor(t, func() bool {
				mu.Lock()
				defer mu.Unlock()
				for k := range keys {
					if done[fmt.Sprintf("job-%d", k)] < rounds {
						return false
					}
				}
				return true
			}, "the keys did not make %d rounds each", rounds)
			stop()
			mu.Lock()
			defer mu.Unlock()
			t.Logf("%s: %d reconciles, %d own status writes over %d keys in %v: %d given an object older than their own last write, %d with another status at that revision",
				b.name, total, keys*rounds, keys, time.Since(start).Round(time.Millisecond), stale, wrongStatus)
			require.GreaterOrEqual(t, keys*rounds, 1000)
			require.Zero(t, stale, "reconciles were given objects older than their controller's own writes; the first: %s", firstStale)
			require.Zero(t, wrongStatus, "reconciles were given another status than the one written at that revision")
		})
	}
}

// lagBackend opens an empty store of replica sets.
type lagBackend struct {
	name      string
	heartbeat time.Duration
	open      func(t *testing.T) store.Store[*replicaSet]
}

// lagBackends are the chaos tests' backends, and the in-memory store with
// its watch events delayed by lag.
func lagBackends(lag time.Duration) []lagBackend {
	var out []lagBackend
	for _, b := range chaosBackends() {
		open := func(t *testing.T) store.Store[*replicaSet] {
			s, _ := b.open(t, 100)
			return s
		}
		out = append(out, lagBackend{name: b.name, heartbeat: b.heartbeat, open: open})
		if b.name == "memory" {
			out = append(out, lagBackend{name: "memory-lagging-watch", heartbeat: b.heartbeat, open: func(t *testing.T) store.Store[*replicaSet] {
				return laggingStore{Store: open(t), lag: lag}
			}})
		}
	}
	return out
}
