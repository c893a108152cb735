package queue

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Every exported constructor and method, given nil or zero inputs, returns
// an error matching ErrInvalid or does its documented zero-input thing:
// never a panic.
func TestNilAndZeroInputsAreRefusedOrHarmlessNeverAPanic(t *testing.T) {
	ctx := context.Background()
	var nilCtx context.Context
	calls := map[string]func(t *testing.T){
		"Get with a nil context": func(t *testing.T) {
			q := newTestQueue()
			q.Add("a")
			_, err := q.Get(nilCtx)
			require.ErrorIs(t, err, ErrInvalid)
			require.Equal(t, 1, q.View().Len(), "a refused Get takes nothing")
		},
		"Drain with a nil context": func(t *testing.T) {
			_, err := newTestQueue().Drain(nilCtx)
			require.ErrorIs(t, err, ErrInvalid)
		},
		"the zero View reads an empty queue": func(t *testing.T) {
			var v View[string]
			require.Zero(t, v.Len())
			require.False(t, v.ShuttingDown())
			require.False(t, v.Queued("a"))
			require.Zero(t, v.Retries("a"))
			require.Zero(t, v.Stats())
			require.Empty(t, v.Snapshot())
			require.Empty(t, v.Processing())
			_, ok := v.Describe("a")
			require.False(t, ok)
			v.States(func(Handout[string], State) { t.Fatal("the zero View holds a key") })
			v.DueByPriority(func(int, int) { t.Fatal("the zero View holds a due key") })
		},
		"a zero Queue works as New(Options{}) makes it": func(t *testing.T) {
			var q Queue[string]
			require.Zero(t, q.View().Len())
			require.Empty(t, q.View().Snapshot())
			require.Zero(t, q.View().Stats())
			require.Zero(t, q.View().Retries("a"))
			q.Forget("a")
			q.Done("a")
			q.Remove("a")
			q.AddWith("r", AddOptions{RateLimited: true})
			q.AddWith("d", AddOptions{After: time.Hour})
			q.Add("a")
			k, err := q.Get(ctx)
			require.NoError(t, err)
			require.Equal(t, "a", k)
			q.Done(k)
			left, err := q.Drain(ctx)
			require.NoError(t, err)
			require.ElementsMatch(t, []string{"r", "d"}, left)
		},
		"a zero Queue shuts down": func(t *testing.T) {
			var q Queue[string]
			q.ShutDown()
			_, err := q.Get(ctx)
			require.ErrorIs(t, err, ErrShutDown)
		},
		"New with nil pointers in Options uses the defaults": func(t *testing.T) {
			q := New(Options[string]{RateLimiter: (*Exponential[string])(nil), Metrics: (*nopMetrics)(nil)})
			q.AddWith("a", AddOptions{RateLimited: true})
			require.Equal(t, 1, q.View().Retries("a"))
			q.Add("b")
			k, err := q.Get(ctx)
			require.NoError(t, err)
			q.Done(k)
		},
		"zero limiters delay nothing harmful": func(t *testing.T) {
			for _, l := range []RateLimiter[string]{
				NewExponential[string](0, 0, 0),
				NewExponential[string](-1, -1, -1),
				NewBucket[string](0, 0, 0),
				NewBucket[string](-1, -1, -1),
				NewMax[string](),
				NewMax[string](nil, (*Bucket[string])(nil)),
				Max[string]{},
				Max[string]{nil},
			} {
				require.GreaterOrEqual(t, l.When("a"), time.Duration(0))
				l.Forget("a")
				require.GreaterOrEqual(t, l.NumRequeues("a"), 0)
			}
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			require.NotPanics(t, func() { call(t) })
		})
	}
}

type nopMetrics struct{}

func (*nopMetrics) Added()                     {}
func (*nopMetrics) Depth(int)                  {}
func (*nopMetrics) QueueLatency(time.Duration) {}
func (*nopMetrics) WorkDuration(time.Duration) {}
func (*nopMetrics) Retried()                   {}
