package queue

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

func TestShutDownWakesEveryWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newTestQueue()
		errs := make(chan error, 5)
		for range 5 {
			go func() {
				_, err := q.Get(context.Background())
				errs <- err
			}()
		}
		synctest.Wait()
		q.ShutDown()
		for range 5 {
			require.ErrorIs(t, <-errs, ErrShutDown)
		}
		q.ShutDown() // idempotent
	})
}

// Drain lets workers take every ready key, including a key marked dirty
// before the drain, waits for in-flight work, refuses new adds, and leaves
// nothing behind.
func TestDrainFinishesReadyAndInFlightWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newTestQueue()
		for _, k := range []string{"a", "b", "c"} {
			q.Add(k)
		}
		first := mustGet(t, q)
		q.Add(first) // dirty: must be handed out again during the drain
		var mu sync.Mutex
		var handled []string
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				for {
					k, err := q.Get(context.Background())
					if err != nil {
						require.ErrorIs(t, err, ErrShutDown)
						return
					}
					advance(time.Second)
					mu.Lock()
					handled = append(handled, k)
					mu.Unlock()
					q.Add("new") // refused while draining
					q.Done(k)
				}
			})
		}
		left := make(chan []string)
		go func() { left <- q.Drain(context.Background()) }()
		synctest.Wait()
		q.Done(first)
		require.Nil(t, <-left)
		wg.Wait()
		require.ElementsMatch(t, []string{"b", "c", "a"}, handled)
		require.Empty(t, q.Snapshot())
	})
}

// At the deadline Drain stops and reports every key it left behind: in
// flight, still waiting, delayed.
func TestDrainReportsWhatItLeftBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newTestQueue()
		q.Add("stuck")
		require.Equal(t, "stuck", mustGet(t, q))
		q.Add("ready")
		q.AddAfter("later", time.Hour)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		left := q.Drain(ctx) // no worker takes "ready"; "stuck" never finishes
		require.Equal(t, []string{"ready", "later", "stuck"}, left)
		_, err := q.Get(context.Background())
		require.ErrorIs(t, err, ErrShutDown)
		q.Done("stuck") // late Done is harmless
		require.Equal(t, []string{"ready", "later"}, q.Drain(context.Background()))
	})
}

func TestDrainOfIdleQueueReturnsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newTestQueue()
		waiting := make(chan error)
		go func() { _, err := q.Get(context.Background()); waiting <- err }()
		synctest.Wait()
		require.Nil(t, q.Drain(context.Background()))
		require.ErrorIs(t, <-waiting, ErrShutDown)
	})
}

// A worker blocked in Get during a drain, while another key is in flight
// and not dirty, is released: nothing more can become ready.
func TestDrainReleasesIdleWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newTestQueue()
		q.Add("a")
		require.Equal(t, "a", mustGet(t, q))
		idle := make(chan error)
		go func() { _, err := q.Get(context.Background()); idle <- err }()
		synctest.Wait()
		left := make(chan []string)
		go func() { left <- q.Drain(context.Background()) }()
		require.ErrorIs(t, <-idle, ErrShutDown)
		q.Done("a")
		require.Nil(t, <-left)
	})
}

func TestRemoveDuringDrainCompletesIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newTestQueue()
		q.Add("a")
		left := make(chan []string)
		go func() { left <- q.Drain(context.Background()) }()
		synctest.Wait()
		q.Remove("a")
		require.Nil(t, <-left)
	})
}
