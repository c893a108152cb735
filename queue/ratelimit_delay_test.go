package queue

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestExponentialDelayTellsTheWaitAfterNRetries(t *testing.T) {
	e := NewExponential[string](100*time.Millisecond, 2*time.Second, 0)
	for n, want := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, 1600 * time.Millisecond, 2 * time.Second, 2 * time.Second} {
		require.Equal(t, want, e.Delay(n), "%d retries", n)
		require.Equal(t, want, e.When("k"), "When for requeue %d agrees with Delay", n)
	}
	require.Equal(t, 2*time.Second, e.Delay(math.MaxInt))
	require.Equal(t, 100*time.Millisecond, e.Delay(-1))
}

func TestQueuedTellsWhetherAKeyWillBeHandedOutAgain(t *testing.T) {
	q := New(Options[string]{})
	require.False(t, q.View().Queued("a"))
	q.Add("a")
	require.True(t, q.View().Queued("a"), "waiting")
	k, err := q.Get(t.Context())
	require.NoError(t, err)
	require.False(t, q.View().Queued(k), "processing only")
	q.Add(k)
	require.True(t, q.View().Queued(k), "processing and dirty")
	q.Done(k)
	k, _ = q.Get(t.Context())
	q.AddWith(k, AddOptions{After: time.Hour})
	require.True(t, q.View().Queued(k), "processing with a delay")
	q.Done(k)
	require.True(t, q.View().Queued(k), "delayed")
	var zero Queue[string]
	require.False(t, zero.View().Queued("x"))
}
