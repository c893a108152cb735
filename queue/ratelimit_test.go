package queue

import (
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/internal/mapshrink"
)

func TestExponentialDoublesUpToCap(t *testing.T) {
	e := NewExponential[string](time.Millisecond, 10*time.Millisecond, 0)
	var got []time.Duration
	for range 6 {
		got = append(got, e.When("a"))
	}
	ms := time.Millisecond
	require.Equal(t, []time.Duration{ms, 2 * ms, 4 * ms, 8 * ms, 10 * ms, 10 * ms}, got)
	require.Equal(t, 6, e.NumRequeues("a"))
	require.Equal(t, time.Millisecond, e.When("b"), "keys back off independently")
	e.Forget("a")
	require.Zero(t, e.NumRequeues("a"))
	require.Equal(t, time.Millisecond, e.When("a"))
}

// Shifting base left by the requeue count would overflow after 63 requeues;
// the delay must stay at the cap, never wrap to a tiny or negative value.
func TestExponentialDoesNotOverflow(t *testing.T) {
	e := NewExponential[int](time.Second, 1<<62, 0)
	for i := range 200 {
		d := e.When(1)
		require.Positive(t, d, "requeue %d", i)
		require.LessOrEqual(t, d, time.Duration(1<<62))
	}
	require.Equal(t, time.Duration(1<<62), e.When(1))
}

func TestExponentialJitterStaysWithinBounds(t *testing.T) {
	e := NewExponential[int](100*time.Millisecond, time.Second, 0.5)
	for i := range 1000 {
		d := e.When(i)
		require.GreaterOrEqual(t, d, 100*time.Millisecond)
		require.LessOrEqual(t, d, 150*time.Millisecond)
	}
	for range 20 {
		require.LessOrEqual(t, e.When(-1), time.Second, "jitter must not exceed the cap")
	}
}

// Out-of-range arguments (a zero base, a negative cap, jitter above 1) are
// clamped: the limiter still answers with a positive delay, never a panic.
func TestExponentialClampsOutOfRangeArgumentsToAPositiveDelay(t *testing.T) {
	e := NewExponential[int](0, -time.Second, 7)
	require.Equal(t, time.Duration(1), e.When(1))
	require.LessOrEqual(t, e.When(1), time.Duration(1))
}

func TestExponentialGivesMemoryBack(t *testing.T) {
	e := NewExponential[int](time.Millisecond, time.Second, 0)
	for i := range 100000 {
		e.When(i)
	}
	for i := range 100000 {
		e.Forget(i)
	}
	require.Less(t, e.peak, mapshrink.Floor, "the failure map was not rebuilt after draining")
}

func TestBucketDelayIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBucket[string](1, 2, 3*time.Second)
		var got []time.Duration
		for range 8 {
			got = append(got, b.When("k"))
		}
		s := time.Second
		// Two tokens of burst, then one per second, and never more than 3s.
		require.Equal(t, []time.Duration{0, 0, s, 2 * s, 3 * s, 3 * s, 3 * s, 3 * s}, got)
		require.Zero(t, b.NumRequeues("k"))
		b.Forget("k")
		// Capped requests gave their tokens back, so the bucket refills as
		// if only the granted ones had been taken.
		advance(5 * time.Second)
		require.Equal(t, time.Duration(0), b.When("k"))
	})
}

func TestMaxTakesLongestDelay(t *testing.T) {
	fast := NewExponential[string](time.Millisecond, time.Second, 0)
	slow := NewExponential[string](10*time.Millisecond, time.Second, 0)
	m := NewMax[string](fast, slow)
	require.Equal(t, 10*time.Millisecond, m.When("a"))
	require.Equal(t, 20*time.Millisecond, m.When("a"))
	require.Equal(t, 2, m.NumRequeues("a"))
	m.Forget("a")
	require.Zero(t, fast.NumRequeues("a"))
	require.Zero(t, slow.NumRequeues("a"))
}

// The default limiter's first delay for a key is 5 ms plus at most 10%
// jitter, and no later delay exceeds the 5-minute cap.
func TestDefaultRateLimiterStartsAt5msAndNeverExceeds5Minutes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rl := DefaultRateLimiter[string]()
		d := rl.When("a")
		require.GreaterOrEqual(t, d, 5*time.Millisecond)
		require.LessOrEqual(t, d, 6*time.Millisecond)
		for range 100 {
			require.LessOrEqual(t, rl.When("a"), 5*time.Minute)
		}
	})
}

func TestAddRateLimitedBacksOffUntilForget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New(Options[string]{RateLimiter: NewExponential[string](time.Second, time.Minute, 0)})
		start := time.Now()
		var at []time.Duration
		for range 3 {
			q.AddWith("a", AddOptions{RateLimited: true})
			k, when := getAt(t, q)
			require.Equal(t, "a", k)
			at = append(at, when.Sub(start))
			start = when
			q.Done("a")
		}
		require.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}, at)
		require.Equal(t, 3, q.View().Retries("a"))
		q.Forget("a")
		require.Zero(t, q.View().Retries("a"))
		q.AddWith("a", AddOptions{RateLimited: true})
		_, when := getAt(t, q)
		require.Equal(t, time.Second, when.Sub(start))
	})
}

// With both After and RateLimited, the key waits for the longer delay, and
// the rate-limited add counts as a requeue.
func TestAddWithAfterAndRateLimitedWaitsForTheLongerDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New(Options[string]{RateLimiter: NewExponential[string](time.Second, time.Minute, 0)})
		start := time.Now()
		q.AddWith("a", AddOptions{After: 5 * time.Second, RateLimited: true})
		_, when := getAt(t, q)
		require.Equal(t, 5*time.Second, when.Sub(start))
		q.Done("a")
		require.Equal(t, 1, q.View().Retries("a"))
	})
}

// Jitter on a cap near the largest duration saturates at the cap instead
// of overflowing into a negative delay.
func TestExponentialJitterDoesNotOverflow(t *testing.T) {
	e := NewExponential[string](time.Duration(math.MaxInt64/2+1), time.Duration(math.MaxInt64), 1)
	for range 50 {
		require.Positive(t, e.When("k"))
	}
}

// Forget and NumRequeues answer without the lock while no key is backing
// off; the count of keys that are must follow every When and Forget, or
// they would answer for the wrong state. A model runs beside the limiter.
func TestExponentialCountsAreRightAcrossForgets(t *testing.T) {
	e := NewExponential[int](time.Millisecond, time.Second, 0)
	model := map[int]int{}
	ops := []struct {
		forget bool
		key    int
	}{
		{false, 1}, {false, 1}, {true, 2}, {false, 2}, {true, 1}, {true, 1},
		{true, 3}, {false, 3}, {true, 2}, {true, 3}, {true, 3}, {false, 1},
	}
	for i, op := range ops {
		if op.forget {
			e.Forget(op.key)
			delete(model, op.key)
		} else {
			e.When(op.key)
			model[op.key]++
		}
		for k := 1; k <= 3; k++ {
			require.Equal(t, model[k], e.NumRequeues(k), "key %d after step %d", k, i)
		}
		require.Equal(t, int64(len(model)), e.keys.Load(), "after step %d", i)
	}
}

// The count stays equal to the map's size under concurrent use (run with
// -race).
func TestExponentialCountMatchesItsMapUnderConcurrency(t *testing.T) {
	e := NewExponential[int](time.Millisecond, time.Second, 0)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				k := (g*7 + i) % 16
				switch i % 3 {
				case 0:
					e.When(k)
				case 1:
					e.Forget(k)
				default:
					_ = e.NumRequeues(k)
				}
			}
		})
	}
	wg.Wait()
	e.mu.Lock()
	defer e.mu.Unlock()
	require.Equal(t, int64(len(e.failures)), e.keys.Load())
}
