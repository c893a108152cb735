package queue

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestConcurrentWorkersNeverShareAKeyAndLoseNoAdd runs producers that add, re-add while processing,
// delay, rate-limit, forget and remove keys, against 8 workers. It checks
// that no key is ever held by two workers at once, and that no add is lost:
// every key added after its last Remove is handed out at least once after
// its last add.
//
// It runs on the real clock, with real parallelism, rather than in a
// synctest bubble: under the race detector, thousands of fake-clock timers
// in one bubble have crashed the detector's own bookkeeping (a fault in its
// stack depot) in about one run in ten. Delays are microseconds, and the
// only wait on the clock is for the queue to go idle, bounded as a guard
// against a hang.
func TestConcurrentWorkersNeverShareAKeyAndLoseNoAdd(t *testing.T) {
	const (
		keys      = 64
		producers = 4
		workers   = 8
	)
	opsPerProducer := 20000
	if testing.Short() {
		opsPerProducer = 2000
	}
	q := New(Options[int]{RateLimiter: NewExponential[int](time.Microsecond, 50*time.Microsecond, 0.5)})

	var (
		holders [keys]atomic.Int32
		// addSeq[k] counts adds of k; seenSeq[k] is addSeq[k] as read by the
		// worker that was handed k, before it handled it. A key's last add
		// is honoured when some hand-out after it sees its count.
		addSeq  [keys]atomic.Int64
		seenSeq [keys]atomic.Int64
		removed [keys]atomic.Bool
		overlap atomic.Int32
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				k, err := q.Get(ctx)
				if err != nil {
					return
				}
				if holders[k].Add(1) != 1 {
					overlap.Add(1)
				}
				seen := addSeq[k].Load()
				for {
					old := seenSeq[k].Load()
					if seen <= old || seenSeq[k].CompareAndSwap(old, seen) {
						break
					}
				}
				// Hold the key a while, so producers' adds land while it
				// is processing.
				for range rand.IntN(8) {
					runtime.Gosched()
				}
				if rand.IntN(4) == 0 {
					q.Add(k) // re-add while processing
				}
				holders[k].Add(-1)
				q.Done(k)
			}
		})
	}
	var prod sync.WaitGroup
	var mu [keys]sync.Mutex // orders each key's add and its record
	for p := range producers {
		prod.Go(func() {
			r := rand.New(rand.NewPCG(uint64(p), 1))
			for range opsPerProducer {
				k := r.IntN(keys)
				mu[k].Lock()
				switch op := r.IntN(10); {
				case op < 4:
					addSeq[k].Add(1)
					removed[k].Store(false)
					q.Add(k)
				case op < 6:
					addSeq[k].Add(1)
					removed[k].Store(false)
					q.AddWith(k, AddOptions{After: time.Duration(r.IntN(100)) * time.Microsecond})
				case op < 8:
					addSeq[k].Add(1)
					removed[k].Store(false)
					q.AddWith(k, AddOptions{RateLimited: true})
				case op < 9:
					q.Forget(k)
				default:
					q.Remove(k)
					removed[k].Store(true)
				}
				mu[k].Unlock()
				if r.IntN(2) == 0 {
					runtime.Gosched()
				}
			}
		})
	}
	prod.Wait()
	// Wait for every delay to come due and the workers to go idle.
	guard := time.After(30 * time.Second)
	for s := q.View().Stats(); s.Ready+s.Delayed+s.Processing > 0; s = q.View().Stats() {
		select {
		case <-guard:
			t.Fatalf("the queue did not go idle: %+v", s)
		case <-time.After(time.Millisecond):
		}
	}
	require.Zero(t, overlap.Load(), "a key was held by two workers at once")
	for k := range keys {
		if !removed[k].Load() {
			require.GreaterOrEqual(t, seenSeq[k].Load(), addSeq[k].Load(), "the last add of key %d was lost", k)
		}
	}
	left, err := q.Drain(context.Background())
	require.NoError(t, err)
	require.Nil(t, left)
	cancel()
	wg.Wait()
	_, err = q.Get(context.Background())
	require.True(t, errors.Is(err, ErrShutDown))
}
