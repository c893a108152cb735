package queue

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// drainResult is what a Drain returned.
type drainResult struct {
	left []string
	err  error
}

// startDrain runs Drain in a goroutine and delivers its result.
func startDrain(ctx context.Context, q *Queue[string]) <-chan drainResult {
	done := make(chan drainResult, 1)
	go func() {
		left, err := q.Drain(ctx)
		done <- drainResult{left, err}
	}()
	return done
}

// startGet runs Get in a goroutine and delivers its result.
func startGet(q *Queue[string]) <-chan getResult {
	done := make(chan getResult, 1)
	go func() {
		k, err := q.Get(context.Background())
		done <- getResult{k, err}
	}()
	return done
}

type getResult struct {
	key string
	err error
}

// undelivered fails the test if c has delivered. Call it after synctest.Wait.
func undelivered[T any](t *testing.T, c <-chan T, what string) {
	t.Helper()
	select {
	case v := <-c:
		t.Fatalf("%s returned early: %v", what, v)
	default:
	}
}

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
		drained := startDrain(context.Background(), q)
		synctest.Wait()
		q.Done(first)
		r := <-drained
		require.NoError(t, r.err)
		require.Nil(t, r.left)
		wg.Wait()
		require.ElementsMatch(t, []string{"b", "c", "a"}, handled)
		require.Empty(t, q.View().Snapshot())
	})
}

// At the deadline Drain stops, returns the context's error, and reports
// every key it left behind: in flight, still waiting, delayed.
func TestDrainReportsWhatItLeftBehindAndWhy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newTestQueue()
		q.Add("stuck")
		require.Equal(t, "stuck", mustGet(t, q))
		q.Add("ready")
		q.AddWith("later", AddOptions{After: time.Hour})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		left, err := q.Drain(ctx) // no worker takes "ready"; "stuck" never finishes
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Equal(t, []string{"ready", "later", "stuck"}, left)
		_, err = q.Get(context.Background())
		require.ErrorIs(t, err, ErrShutDown)
		q.Done("stuck") // late Done is harmless
		left, err = q.Drain(context.Background())
		require.NoError(t, err)
		require.Equal(t, []string{"ready", "later"}, left)
	})
}

func TestDrainOfIdleQueueReturnsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newTestQueue()
		waiting := startGet(q)
		synctest.Wait()
		left, err := q.Drain(context.Background())
		require.NoError(t, err)
		require.Nil(t, left)
		require.ErrorIs(t, (<-waiting).err, ErrShutDown)
	})
}

// A worker blocked in Get during a drain, while another key is in flight
// and not dirty, is released: nothing more can become ready.
func TestDrainReleasesIdleWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newTestQueue()
		q.Add("a")
		require.Equal(t, "a", mustGet(t, q))
		idle := startGet(q)
		synctest.Wait()
		drained := startDrain(context.Background(), q)
		require.ErrorIs(t, (<-idle).err, ErrShutDown)
		q.Done("a")
		require.NoError(t, (<-drained).err)
	})
}

func TestRemoveDuringDrainCompletesIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newTestQueue()
		q.Add("a")
		drained := startDrain(context.Background(), q)
		synctest.Wait()
		q.Remove("a")
		r := <-drained
		require.NoError(t, r.err)
		require.Nil(t, r.left)
	})
}

// Defect 9 of issue 9: a ShutDown while Drain waited left Drain blocked
// until its context ended, even after every key in flight was Done.
func TestDrainReturnsOnceInFlightWorkIsDoneEvenAfterShutDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newTestQueue()
		q.Add("a")
		q.Add("b")
		require.Equal(t, "a", mustGet(t, q))
		// A bound, so that a Drain that never returns fails instead of hanging.
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		drained := startDrain(ctx, q)
		synctest.Wait()
		undelivered(t, drained, "Drain with a key in flight")
		q.ShutDown()
		synctest.Wait()
		// ShutDown stops hand-outs, not the wait for work in flight.
		undelivered(t, drained, "Drain with a key in flight after ShutDown")
		_, err := q.Get(context.Background())
		require.ErrorIs(t, err, ErrShutDown, "ShutDown stops hand-outs at once")
		q.Done("a")
		r := <-drained
		require.NoError(t, r.err)
		require.Equal(t, []string{"b"}, r.left, "the ready key ShutDown kept back is reported")
	})
}

// A Drain that starts after ShutDown still waits for the keys in flight.
func TestDrainAfterShutDownWaitsForInFlightWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newTestQueue()
		q.Add("a")
		require.Equal(t, "a", mustGet(t, q))
		q.ShutDown()
		// A bound, so that a Drain that never returns fails instead of hanging.
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		drained := startDrain(ctx, q)
		synctest.Wait()
		undelivered(t, drained, "Drain with a key in flight")
		q.Done("a")
		r := <-drained
		require.NoError(t, r.err)
		require.Nil(t, r.left)
	})
}

// During a drain, a Get waits for a dirty key in flight and hands it out
// again once it is Done; only then does the next Get return ErrShutDown.
func TestGetDuringDrainHandsOutDirtyKeyAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newTestQueue()
		q.Add("a")
		require.Equal(t, "a", mustGet(t, q))
		q.Add("a") // dirty
		drained := startDrain(context.Background(), q)
		got := startGet(q)
		synctest.Wait()
		undelivered(t, got, "Get while a dirty key is in flight")
		q.Done("a")
		r := <-got
		require.NoError(t, r.err)
		require.Equal(t, "a", r.key)
		synctest.Wait()
		undelivered(t, drained, "Drain while the dirty key runs again")
		q.Done("a")
		d := <-drained
		require.NoError(t, d.err)
		require.Nil(t, d.left)
		_, err := q.Get(context.Background())
		require.ErrorIs(t, err, ErrShutDown)
	})
}

// Once the last dirty key of a drain is handed out, every other waiting Get
// returns ErrShutDown at once, although other keys are still in flight:
// nothing more can become ready.
func TestGetDuringDrainReturnsOnceNothingCanBecomeReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newTestQueue()
		q.Add("dirty")
		q.Add("clean")
		require.Equal(t, "dirty", mustGet(t, q))
		require.Equal(t, "clean", mustGet(t, q))
		q.Add("dirty")
		drained := startDrain(context.Background(), q)
		g1, g2 := startGet(q), startGet(q)
		synctest.Wait()
		undelivered(t, g1, "Get while a dirty key is in flight")
		undelivered(t, g2, "Get while a dirty key is in flight")
		q.Done("dirty")
		synctest.Wait()
		var r1, r2 getResult
		select {
		case r1 = <-g1:
		default:
			t.Fatal("first Get still blocked")
		}
		select {
		case r2 = <-g2:
		default:
			t.Fatal("second Get still blocked although nothing can become ready")
		}
		if r1.err != nil {
			r1, r2 = r2, r1
		}
		require.NoError(t, r1.err)
		require.Equal(t, "dirty", r1.key)
		require.ErrorIs(t, r2.err, ErrShutDown)
		undelivered(t, drained, "Drain with keys in flight")
		q.Done("dirty")
		q.Done("clean")
		require.NoError(t, (<-drained).err)
	})
}

// ShutDown during a drain releases a Get waiting for a dirty key; the
// key, ready once Done, is reported as left behind.
func TestShutDownDuringDrainReleasesGetWaitingForDirtyKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newTestQueue()
		q.Add("a")
		require.Equal(t, "a", mustGet(t, q))
		q.Add("a")
		// A bound, so that a Drain that never returns fails instead of hanging.
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		drained := startDrain(ctx, q)
		got := startGet(q)
		synctest.Wait()
		q.ShutDown()
		require.ErrorIs(t, (<-got).err, ErrShutDown)
		synctest.Wait()
		undelivered(t, drained, "Drain with a key in flight")
		q.Done("a")
		r := <-drained
		require.NoError(t, r.err)
		require.Equal(t, []string{"a"}, r.left)
	})
}

func TestDrainRefusesNilContext(t *testing.T) {
	q := newTestQueue()
	q.Add("a")
	//lint:ignore SA1012 a nil context is the input under test
	left, err := q.Drain(nil) //nolint:staticcheck // a nil context is the input under test
	require.ErrorIs(t, err, ErrInvalid)
	require.Nil(t, left)
	require.False(t, q.View().ShuttingDown(), "a refused Drain changes nothing")
}
