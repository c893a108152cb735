package bench

import (
	"flag"
	"testing"
	"time"
)

// Full sizes of the queue scenarios, as the README's table states them.
// -queue.scale multiplies every key and add count (not delays or workers).
const (
	s1Keys = 1 << 16

	s2Producers = 4
	s2Adds      = 500_000 // per producer
	s2Keys      = 10_000

	s3Keys = 1_000_000

	s4Keys     = 100_000
	s4MaxDelay = 200 * time.Millisecond

	s5Keys     = 10_000
	s5Failures = 3
)

var (
	queueScale   = flag.Float64("queue.scale", 1, "multiplies the key and add counts of the queue benchmarks")
	queueWorkers = flag.Int("queue.workers", 8, "worker goroutines in the queue benchmarks")
)

// benchBackoff is the explicit per-key backoff every implementation gets.
var benchBackoff = Backoff{Base: time.Microsecond, Max: time.Millisecond}

// scaled applies -queue.scale to a full size, keeping at least one.
func scaled(n int) int { return max(1, int(float64(n)**queueScale)) }

// forEachImplBench runs f as one sub-benchmark per implementation.
func forEachImplBench(b *testing.B, f func(b *testing.B, impl Impl)) {
	for _, impl := range Impls() {
		b.Run(impl.Name, func(b *testing.B) {
			b.ReportAllocs()
			f(b, impl)
		})
	}
}

// msPerOp reports a total duration over b.N runs as milliseconds per run.
func msPerOp(b *testing.B, total time.Duration, unit string) {
	b.ReportMetric(float64(total)/float64(time.Millisecond)/float64(b.N), unit)
}

func BenchmarkQueueS1AddGetDone(b *testing.B) {
	keys := NewKeys(scaled(s1Keys))
	forEachImplBench(b, func(b *testing.B, impl Impl) {
		q := impl.New(benchBackoff)
		defer q.ShutDown()
		b.ResetTimer()
		if bad := AddGetDone(q, keys, b.N); bad != 0 {
			b.Fatalf("%d Gets handed out a key other than the one just added", bad)
		}
	})
}

func BenchmarkQueueS2Storm(b *testing.B) {
	keys := NewKeys(scaled(s2Keys))
	cfg := StormConfig{Producers: s2Producers, AddsPerProducer: scaled(s2Adds), Workers: *queueWorkers}
	forEachImplBench(b, func(b *testing.B, impl Impl) {
		var addPhase time.Duration
		var handed, during int64
		for range b.N {
			r := Storm(impl.New(benchBackoff), keys, cfg)
			if r.Distinct != len(keys) {
				b.Fatalf("%d distinct keys handed out, want %d", r.Distinct, len(keys))
			}
			addPhase += r.AddPhase
			handed += r.Handed
			during += r.HandedDuringAdds
		}
		msPerOp(b, addPhase, "add-ms/op")
		b.ReportMetric(float64(handed)/float64(b.N), "handed/op")
		b.ReportMetric(float64(during)/float64(b.N), "handed-during-adds/op")
	})
}

func BenchmarkQueueS3Backlog(b *testing.B) {
	keys := NewKeys(scaled(s3Keys))
	forEachImplBench(b, func(b *testing.B, impl Impl) {
		var addPhase, drainPhase time.Duration
		var perKey, peak, held float64
		for range b.N {
			r := Backlog(func() Queue { return impl.New(benchBackoff) }, keys, *queueWorkers)
			if r.Queued != len(keys) || r.Handed != len(keys) {
				b.Fatalf("%d keys queued and %d handed out, want %d", r.Queued, r.Handed, len(keys))
			}
			addPhase += r.AddPhase
			drainPhase += r.DrainPhase
			perKey += r.HeapPerKey()
			peak += float64(r.PeakHeap)
			held += float64(r.HeldAfter)
		}
		n := float64(b.N)
		msPerOp(b, addPhase, "add-ms/op")
		msPerOp(b, drainPhase, "drain-ms/op")
		b.ReportMetric(perKey/n, "heap-B/key")
		b.ReportMetric(peak/n/(1<<20), "peak-heap-MiB")
		b.ReportMetric(held/n/(1<<20), "held-after-drain-MiB")
		b.ReportMetric(100*held/peak, "held-%-of-peak")
	})
}

func BenchmarkQueueS4Delayed(b *testing.B) {
	keys := NewKeys(scaled(s4Keys))
	delays := UniformDelays(len(keys), s4MaxDelay, 1)
	forEachImplBench(b, func(b *testing.B, impl Impl) {
		var completion, addPhase time.Duration
		var all DelayResult
		for range b.N {
			r := Delayed(impl.New(benchBackoff), keys, delays, *queueWorkers)
			completion += r.Completion
			addPhase += r.AddPhase
			all.Lateness = append(all.Lateness, r.Lateness...)
			all.QuietLateness = append(all.QuietLateness, r.QuietLateness...)
		}
		all.sort()
		msPerOp(b, completion, "completion-ms/op")
		msPerOp(b, addPhase, "add-ms/op")
		us := func(sorted []time.Duration, p float64) float64 {
			return float64(Percentile(sorted, p)) / float64(time.Microsecond)
		}
		b.ReportMetric(us(all.Lateness, 0.50), "p50-late-us")
		b.ReportMetric(us(all.Lateness, 0.99), "p99-late-us")
		b.ReportMetric(us(all.Lateness, 1), "max-late-us")
		b.ReportMetric(us(all.QuietLateness, 0.99), "p99-late-after-adds-us")
		b.ReportMetric(us(all.QuietLateness, 1), "max-late-after-adds-us")
	})
}

func BenchmarkQueueS5Retry(b *testing.B) {
	keys := NewKeys(scaled(s5Keys))
	forEachImplBench(b, func(b *testing.B, impl Impl) {
		var attempts int64
		for range b.N {
			attempts += Retry(impl.New(benchBackoff), keys, s5Failures, *queueWorkers).Attempts
		}
		if want := int64(b.N * len(keys) * (s5Failures + 1)); attempts != want {
			b.Fatalf("%d attempts, want %d", attempts, want)
		}
	})
}
