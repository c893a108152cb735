package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile/dependency"
	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// ByOutcome orders keys by how much their latest outcome needs a person:
// panic, error, terminal, dependency_down, conflict, then requeue and
// requeue_after, then success, then keys never reconciled; Descending
// reverses it.
func TestByOutcomeOrdersKeysByHowMuchTheyNeedAPerson(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		release := make(chan struct{})
		rec := ReconcilerFunc[*item](func(ctx context.Context, req Request[*item]) (Result, error) {
			switch req.Key {
			case "panic":
				panic("boom")
			case "error":
				return Result{}, errors.New("transient")
			case "terminal":
				return Result{}, Terminal(errors.New("hopeless"))
			case "dependency_down":
				return Result{}, dependency.Down("postgres", errors.New("refused"))
			case "conflict":
				return Result{}, fmt.Errorf("status: %w", store.ErrConflict)
			case "requeue":
				return Result{Requeue: true}, nil
			case "requeue_after":
				return Result{RequeueAfter: time.Hour}, nil
			case "never":
				<-release // still in its first reconcile
			}
			return Result{}, nil
		})
		c, err := New(s, rec, Options[*item]{Name: "order", Workers: 2,
			RateLimiter:  queue.NewExponential[string](time.Hour, time.Hour, 0),
			Dependencies: []*dependency.Dependency{{Name: "postgres", Check: func(context.Context) error { return nil }}}})
		require.NoError(t, err)
		put(t, s, "never", &item{}) // holds one worker in its first reconcile
		for _, key := range []string{"success", "terminal", "requeue_after", "conflict", "error", "requeue", "panic"} {
			put(t, s, key, &item{})
		}
		stop := start(t, c)
		defer stop()
		defer close(release)
		synctest.Wait()
		put(t, s, "dependency_down", &item{}) // last: it holds the keys after it
		synctest.Wait()
		want := []string{"panic", "error", "terminal", "dependency_down", "conflict", "requeue", "requeue_after", "success", "never"}
		keys := func(desc bool) []string {
			var out []string
			for _, k := range c.Inspect(KeyQuery{Sort: ByOutcome, Descending: desc}).Keys {
				out = append(out, k.Key)
			}
			return out
		}
		require.Equal(t, want, keys(false))
		slices.Reverse(want)
		require.Equal(t, want, keys(true))
	})
}
