package bench

import (
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// UniformDelays returns n delays drawn uniformly from [0, max], the same for
// a given seed.
func UniformDelays(n int, max time.Duration, seed uint64) []time.Duration {
	r := rand.New(rand.NewPCG(seed, seed))
	delays := make([]time.Duration, n)
	for i := range delays {
		delays[i] = time.Duration(r.Int64N(int64(max) + 1))
	}
	return delays
}

// DelayResult is what one run of scenario S4 measured. Lateness is a key's
// hand-out time minus (its AddAfter call time + its delay).
type DelayResult struct {
	Completion time.Duration // first AddAfter until the last key was handed out
	AddPhase   time.Duration // first AddAfter until the last one returned
	// Lateness holds every key's lateness, sorted.
	Lateness []time.Duration
	// QuietLateness holds, sorted, the lateness of the keys due after the
	// last AddAfter returned, when only the queue and its workers were
	// running: it separates the queue's own lateness from the time the
	// busy producer kept other goroutines waiting for a CPU.
	QuietLateness []time.Duration
}

// Percentile returns the p-quantile (0 ≤ p ≤ 1) of sorted samples by
// nearest rank, or 0 if there are none.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(p*float64(len(sorted)-1)+0.5)]
}

// Delayed is scenario S4: one goroutine calls AddAfter(keys[i], delays[i])
// for every key (all distinct) while workers Get and Done, and each key's
// lateness is recorded when it is handed out.
func Delayed(q Queue, keys []string, delays []time.Duration, workers int) DelayResult {
	var (
		deadline = make([]time.Duration, len(keys)) // since start
		late     = make([]time.Duration, len(keys))
		finished atomic.Int64
		handed   = make(chan struct{})
		wg       sync.WaitGroup
	)
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for {
				key, ok := q.Get()
				if !ok {
					return
				}
				at := time.Since(start)
				i := KeyIndex(key)
				late[i] = at - deadline[i]
				q.Done(key)
				if finished.Add(1) == int64(len(keys)) {
					close(handed)
				}
			}
		})
	}
	for i, key := range keys {
		deadline[i] = time.Since(start) + delays[i]
		q.AddAfter(key, delays[i])
	}
	res := DelayResult{AddPhase: time.Since(start)}
	<-handed
	res.Completion = time.Since(start)
	q.ShutDown()
	wg.Wait()

	res.Lateness = late
	for i, d := range deadline {
		if d >= res.AddPhase {
			res.QuietLateness = append(res.QuietLateness, late[i])
		}
	}
	res.sort()
	return res
}

// sort puts the lateness samples in order, as Percentile needs.
func (r DelayResult) sort() {
	slices.Sort(r.Lateness)
	slices.Sort(r.QuietLateness)
}
