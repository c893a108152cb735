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
	"github.com/stretchr/testify/require"
)

// TestWritesStatusThenErrorBacksOffOnTheLimitersScheduleOnEveryBackend: a
// reconcile that writes status through req.Store and then fails waits out
// its rate limiter's delay before the next try, on every backend: the echo
// of its own write neither wakes the key nor cancels the backoff (before
// the fix, the retries came about 1 ms apart). The gaps are measured on the
// real clock and checked against the limiter's delays as lower bounds
// only. After the last, successful reconcile, its own status write wakes
// nothing: the key is reconciled exactly as often as the schedule allows.
func TestWritesStatusThenErrorBacksOffOnTheLimitersScheduleOnEveryBackend(t *testing.T) {
	const failures = 5
	for _, b := range chaosBackends() {
		t.Run(b.name, func(t *testing.T) {
			s, _ := b.open(t, 100)
			ctx := t.Context()
			_, err := writeSpec(ctx, s, "job", 1)
			require.NoError(t, err)

			var mu sync.Mutex
			var at []time.Time
			var attempts []int
			var lastWrite int64
			rec := reconcile.ReconcilerFunc[*replicaSet](func(ctx context.Context, req reconcile.Request[*replicaSet]) (reconcile.Result, error) {
				start := time.Now()
				obj, err := bumpReady(ctx, req)
				if err != nil {
					return reconcile.Result{}, fmt.Errorf("status write: %w", err)
				}
				mu.Lock()
				defer mu.Unlock()
				at = append(at, start)
				attempts = append(attempts, req.Retries)
				lastWrite = obj.Revision
				if len(at) <= failures {
					return reconcile.Result{}, errors.New("the job's attempt failed")
				}
				return reconcile.Result{}, nil
			})
			limiter := queue.NewExponential[string](50*time.Millisecond, 10*time.Second, 0)
			c, err := reconcile.New[*replicaSet](s, rec, reconcile.Options[*replicaSet]{
				Name:              "backoff",
				RateLimiter:       limiter,
				HeartbeatInterval: b.heartbeat,
			})
			require.NoError(t, err)
			startController(t, c)

			count := func() int { mu.Lock(); defer mu.Unlock(); return len(at) }
			waitFor(t, func() bool { return count() >= failures+1 }, "the key was not retried %d times", failures)
			mu.Lock()
			rev := lastWrite
			mu.Unlock()
			// Once the cache holds the last own write and everything up
			// to it was reconciled, a wake-up by its echo would have run.
			wctx, cancel := context.WithTimeout(ctx, patience)
			defer cancel()
			require.NoError(t, c.WaitForRevision(wctx, rev))

			mu.Lock()
			defer mu.Unlock()
			require.Len(t, at, failures+1, "the key was reconciled more often than its backoff allows (its own status write woke it): gaps %v",
				lazy(func() string { return fmt.Sprint(gapsOf(at)) }))
			want := make([]int, failures+1)
			for i := range want {
				want[i] = i
			}
			require.Equal(t, want, attempts, "Request.Retries counts the failed tries")
			gaps := gapsOf(at)
			t.Logf("%s: gaps between reconciles %v (limiter delays %v)", b.name, gaps, delays(limiter, failures))
			for i, g := range gaps {
				require.GreaterOrEqual(t, g, limiter.Delay(i),
					"retry %d came %v after the failure, before its backoff of %v: the own status write cancelled it", i+1, g, limiter.Delay(i))
			}
		})
	}
}

// delays lists the limiter's delays after attempts 0..n-1.
func delays(l *queue.Exponential[string], n int) []time.Duration {
	d := make([]time.Duration, n)
	for i := range d {
		d[i] = l.Delay(i)
	}
	return d
}

// gapsOf returns the time between consecutive instants.
func gapsOf(at []time.Time) []time.Duration {
	var gaps []time.Duration
	for i := 1; i < len(at); i++ {
		gaps = append(gaps, at[i].Sub(at[i-1]))
	}
	return gaps
}
