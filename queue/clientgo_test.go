package queue

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// Scenarios that client-go's workqueue tests drive their queue through,
// restated as converge's guarantees.

// A delayed key added while the queue waits for a later deadline fires at
// its own, earlier deadline, and the later one still fires at its time
// (client-go's TestAddTwoFireEarly).
func TestEarlierDelayAddedLaterFiresFirstAndLaterDelaysStillFire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newTestQueue()
		start := time.Now()
		q.AddWith("first", AddOptions{After: time.Second})
		q.AddWith("second", AddOptions{After: 50 * time.Millisecond})
		k, at := getAt(t, q)
		require.Equal(t, "second", k)
		require.Equal(t, 50*time.Millisecond, at.Sub(start))
		q.AddWith("third", AddOptions{After: 2 * time.Second})
		k, at = getAt(t, q)
		require.Equal(t, "first", k)
		require.Equal(t, time.Second, at.Sub(start))
		k, at = getAt(t, q)
		require.Equal(t, "third", k)
		require.Equal(t, 2050*time.Millisecond, at.Sub(start))
		q.ShutDown()
	})
}

// Keys delayed in reverse order of their deadlines come out by deadline
// (client-go's TestCopyShifting).
func TestDelayedKeysComeOutByDeadlineWhateverTheOrderOfAdds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newTestQueue()
		q.AddWith("first", AddOptions{After: time.Second})
		q.AddWith("second", AddOptions{After: 500 * time.Millisecond})
		q.AddWith("third", AddOptions{After: 250 * time.Millisecond})
		advance(2 * time.Second)
		synctest.Wait()
		require.Equal(t, 3, q.View().Len())
		for _, want := range []string{"third", "second", "first"} {
			require.Equal(t, want, mustGet(t, q))
		}
		q.ShutDown()
	})
}

// ShutDown does not wait for keys in flight, and their late Done is
// harmless (client-go's TestNoQueueDrainageUsingShutDown).
func TestShutDownReturnsAtOnceWithWorkInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newTestQueue()
		q.Add("a")
		require.Equal(t, "a", mustGet(t, q))
		q.ShutDown() // returns although "a" is in flight
		require.True(t, q.View().ShuttingDown())
		q.Done("a")
		require.Empty(t, q.View().Snapshot())
	})
}

// During a drain, adding a key in flight is refused like any add: it is not
// marked dirty, and the drain ends when the key is Done (client-go's
// TestQueueDrainageUsingShutDownWithDrain, with an add during the drain).
func TestAddOfKeyInFlightDuringDrainIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newTestQueue()
		q.Add("a")
		q.Add("b")
		require.Equal(t, "a", mustGet(t, q))
		require.Equal(t, "b", mustGet(t, q))
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		drained := startDrain(ctx, q)
		synctest.Wait()
		q.Add("a")
		require.Zero(t, q.View().Len())
		q.Done("a")
		synctest.Wait()
		undelivered(t, drained, "Drain with a key in flight")
		q.Done("b")
		r := <-drained
		require.NoError(t, r.err)
		require.Nil(t, r.left, "the refused add left nothing behind")
		_, err := q.Get(ctx)
		require.ErrorIs(t, err, ErrShutDown)
	})
}
