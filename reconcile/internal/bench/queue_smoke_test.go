package bench

import (
	"testing"
	"testing/synctest"
	"time"
)

// testBackoff is the backoff every implementation gets in the smoke tests.
var testBackoff = Backoff{Base: time.Microsecond, Max: time.Millisecond}

// forEachImpl runs f for every implementation in its own synctest bubble, so
// time is fake and a goroutine left behind after ShutDown fails the test.
func forEachImpl(t *testing.T, f func(t *testing.T, impl Impl)) {
	for _, impl := range Impls() {
		t.Run(impl.Name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { f(t, impl) })
		})
	}
}

// KeyIndex gives back the index NewKeys made each key at.
func TestKeyIndexInvertsNewKeys(t *testing.T) {
	for i, key := range NewKeys(1000) {
		if got := KeyIndex(key); got != i {
			t.Fatalf("KeyIndex(%q) = %d, want %d", key, got, i)
		}
	}
}

// Percentile picks the sample nearest to rank p of the sorted samples, and
// is zero without samples.
func TestPercentilePicksTheNearestRankAndZeroWithoutSamples(t *testing.T) {
	sorted := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{0, 1}, {0.5, 6}, {0.99, 10}, {1, 10}} {
		if got := Percentile(sorted, c.p); got != c.want {
			t.Errorf("Percentile(%v) = %v, want %v", c.p, got, c.want)
		}
	}
	if got := Percentile(nil, 0.5); got != 0 {
		t.Errorf("Percentile of no samples = %v, want 0", got)
	}
}

// Every queue hands out, in scenario S1, the key just added.
func TestEveryQueueHandsOutTheKeyJustAdded(t *testing.T) {
	forEachImpl(t, func(t *testing.T, impl Impl) {
		q := impl.New(testBackoff)
		defer q.ShutDown()
		if bad := AddGetDone(q, NewKeys(100), 1000); bad != 0 {
			t.Errorf("%d of 1000 Gets handed out a key other than the one just added", bad)
		}
	})
}

// Every queue, under scenario S2's storm of duplicate adds, hands out every
// key, and never more keys than were added.
func TestEveryQueueUnderAStormHandsOutEveryKeyAndNoMoreThanAdded(t *testing.T) {
	forEachImpl(t, func(t *testing.T, impl Impl) {
		keys := NewKeys(100)
		cfg := StormConfig{Producers: 4, AddsPerProducer: 500, Workers: 8}
		r := Storm(impl.New(testBackoff), keys, cfg)
		if r.Distinct != len(keys) {
			t.Errorf("%d distinct keys handed out, want all %d", r.Distinct, len(keys))
		}
		if adds := int64(cfg.Producers * cfg.AddsPerProducer); r.Handed > adds {
			t.Errorf("%d keys handed out for %d adds", r.Handed, adds)
		}
		if r.HandedDuringAdds > r.Handed {
			t.Errorf("%d keys handed out during the adds, more than the %d in all", r.HandedDuringAdds, r.Handed)
		}
	})
}

// Every queue holds scenario S3's whole backlog of distinct keys and hands
// each out once as it drains.
func TestEveryQueueHoldsAndDrainsAWholeBacklog(t *testing.T) {
	forEachImpl(t, func(t *testing.T, impl Impl) {
		keys := NewKeys(1000)
		r := Backlog(func() Queue { return impl.New(testBackoff) }, keys, 8)
		if r.Queued != len(keys) {
			t.Errorf("%d keys queued after %d distinct adds", r.Queued, len(keys))
		}
		if r.Handed != len(keys) {
			t.Errorf("%d keys handed out by the drain, want %d", r.Handed, len(keys))
		}
	})
}

// Every queue, in scenario S4, hands out each delayed key once and none
// before its delay is over.
func TestEveryQueueHandsOutNoDelayedKeyEarly(t *testing.T) {
	forEachImpl(t, func(t *testing.T, impl Impl) {
		keys := NewKeys(200)
		delays := UniformDelays(len(keys), 20*time.Millisecond, 1)
		r := Delayed(impl.New(testBackoff), keys, delays, 8)
		if len(r.Lateness) != len(keys) {
			t.Fatalf("%d lateness samples, want %d", len(r.Lateness), len(keys))
		}
		if early := r.Lateness[0]; early < 0 {
			t.Errorf("a key was handed out %v before its delay was over", -early)
		}
		if len(r.QuietLateness) > len(r.Lateness) {
			t.Errorf("%d keys due after the adds, more than the %d keys", len(r.QuietLateness), len(r.Lateness))
		}
	})
}

// Every queue, in scenario S5, hands out each failing key once more per
// rate-limited retry, no more and no less.
func TestEveryQueueHandsOutEachKeyOncePerRetry(t *testing.T) {
	forEachImpl(t, func(t *testing.T, impl Impl) {
		keys := NewKeys(100)
		const failures = 3
		r := Retry(impl.New(testBackoff), keys, failures, 8)
		if want := int64(len(keys) * (failures + 1)); r.Attempts != want {
			t.Errorf("%d attempts, want %d (each key once plus %d retries)", r.Attempts, want, failures)
		}
	})
}
