package queue

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

type recordingMetrics struct {
	mu                       sync.Mutex
	adds, retries            int
	depths                   []int
	latencies, workDurations []time.Duration
}

func (m *recordingMetrics) Added()   { m.mu.Lock(); m.adds++; m.mu.Unlock() }
func (m *recordingMetrics) Retried() { m.mu.Lock(); m.retries++; m.mu.Unlock() }
func (m *recordingMetrics) Depth(n int) {
	m.mu.Lock()
	m.depths = append(m.depths, n)
	m.mu.Unlock()
}
func (m *recordingMetrics) QueueLatency(d time.Duration) {
	m.mu.Lock()
	m.latencies = append(m.latencies, d)
	m.mu.Unlock()
}
func (m *recordingMetrics) WorkDuration(d time.Duration) {
	m.mu.Lock()
	m.workDurations = append(m.workDurations, d)
	m.mu.Unlock()
}

// The metrics hooks see every add (deduplicated ones included), every
// rate-limited retry, every change of depth, each key's time in the queue
// and each Done's work duration.
func TestMetricsHooksSeeEveryAddRetryDepthLatencyAndWorkDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &recordingMetrics{}
		q := New(Options[string]{Metrics: m, RateLimiter: NewExponential[string](time.Second, time.Minute, 0)})
		q.Add("a")
		q.Add("a") // deduplicated, still an add
		q.Add("b")
		advance(2 * time.Second)
		k := mustGet(t, q)
		advance(3 * time.Second)
		q.Done(k)
		q.AddWith("c", AddOptions{RateLimited: true})
		advance(time.Second)
		synctest.Wait() // let the queue's timer move "c" to ready
		require.Equal(t, "b", mustGet(t, q))
		m.mu.Lock()
		defer m.mu.Unlock()
		require.Equal(t, 4, m.adds)
		require.Equal(t, 1, m.retries)
		require.Equal(t, []int{1, 2, 1, 2, 1}, m.depths)
		require.Equal(t, []time.Duration{2 * time.Second, 6 * time.Second}, m.latencies)
		require.Equal(t, []time.Duration{3 * time.Second}, m.workDurations)
	})
}
