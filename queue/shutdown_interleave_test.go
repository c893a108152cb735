package queue

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// TestShutDownAndDrainFromManyGoroutinesLoseNothingAndLeaveNothingRunning
// drives the queue as client-go's workqueue tests drive theirs: producers
// add (and re-add keys in flight), consumers Get and Done, and several
// goroutines call ShutDown and Drain at once while producers still run.
// Whatever the interleaving:
//   - every Drain returns without error once no key is in flight, and no
//     key is in flight when it returns;
//   - no key is held by two consumers at once;
//   - a key added once shutdown began is never handed out;
//   - every consumer ends with ErrShutDown;
//   - every key added before shutdown is handled or reported left behind.
func TestShutDownAndDrainFromManyGoroutinesLoseNothingAndLeaveNothingRunning(t *testing.T) {
	for _, c := range []struct{ drains, shutDowns int }{
		{1, 0}, {3, 0}, {0, 3}, {1, 1}, {2, 2}, {3, 1},
	} {
		for seed := range uint64(5) {
			t.Run(fmt.Sprintf("drains=%d,shutdowns=%d,seed=%d", c.drains, c.shutDowns, seed), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					runShutdownInterleaving(t, c.drains, c.shutDowns, seed)
				})
			})
		}
	}
}

func runShutdownInterleaving(t *testing.T, drains, shutDowns int, seed uint64) {
	const (
		keys      = 20
		producers = 5
		consumers = 4
		adds      = 30
	)
	rng := rand.New(rand.NewPCG(seed, seed+1))
	var rngMu sync.Mutex
	pause := func(max time.Duration) {
		rngMu.Lock()
		d := time.Duration(rng.Int64N(int64(max)))
		rngMu.Unlock()
		advance(d)
	}
	q := newTestQueue()
	var (
		mu       sync.Mutex
		added    = map[string]bool{} // keys added before shutdown began
		handled  = map[string]bool{}
		holders  [keys]atomic.Int32
		inFlight atomic.Int32
		late     atomic.Bool // a key added after shutdown began was handed out
		overlap  atomic.Bool
	)
	var producersWG sync.WaitGroup
	for p := range producers {
		producersWG.Go(func() {
			for i := range adds {
				k := fmt.Sprint((p*adds + i) % keys)
				q.Add(k)
				if !q.View().ShuttingDown() {
					// The add came before shutdown began, so it was
					// accepted: the key must be handled or reported.
					mu.Lock()
					added[k] = true
					mu.Unlock()
				}
				pause(3 * time.Millisecond)
			}
		})
	}
	var consumersWG sync.WaitGroup
	errs := make(chan error, consumers)
	for range consumers {
		consumersWG.Go(func() {
			for {
				k, err := q.Get(context.Background())
				if err != nil {
					errs <- err
					return
				}
				if k == "late" {
					late.Store(true)
				}
				var n int
				fmt.Sscan(k, &n)
				if holders[n].Add(1) != 1 {
					overlap.Store(true)
				}
				inFlight.Add(1)
				pause(5 * time.Millisecond)
				mu.Lock()
				handled[k] = true
				mu.Unlock()
				inFlight.Add(-1)
				holders[n].Add(-1)
				q.Done(k)
			}
		})
	}

	advance(20 * time.Millisecond) // let work get going
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	var stoppers sync.WaitGroup
	var leftMu sync.Mutex
	left := map[string]bool{}
	for range drains {
		stoppers.Go(func() {
			l, err := q.Drain(ctx)
			require.NoError(t, err, "Drain gave up although every key in flight finishes")
			require.Zero(t, inFlight.Load(), "Drain returned while a key was in flight")
			leftMu.Lock()
			for _, k := range l {
				left[k] = true
			}
			leftMu.Unlock()
		})
	}
	for range shutDowns {
		stoppers.Go(func() {
			pause(2 * time.Millisecond)
			q.ShutDown()
		})
	}
	stoppers.Go(func() {
		for !q.View().ShuttingDown() {
			advance(time.Millisecond)
		}
		q.Add("late")
	})
	stoppers.Wait()
	producersWG.Wait()
	consumersWG.Wait()
	for range consumers {
		require.ErrorIs(t, <-errs, ErrShutDown)
	}
	// A last Drain reports what the others could not (after a ShutDown
	// alone, the ready keys it kept back).
	l, err := q.Drain(ctx)
	require.NoError(t, err)
	for _, k := range l {
		left[k] = true
	}
	require.False(t, overlap.Load(), "a key was held by two consumers at once")
	require.False(t, late.Load(), "a key added after shutdown began was handed out")
	require.False(t, left["late"], "a key added after shutdown began was kept")
	for k := range added {
		require.True(t, handled[k] || left[k], "key %s was dropped silently", k)
	}
	require.Zero(t, q.View().Stats().Processing)
}
