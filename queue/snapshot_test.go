package queue

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSnapshotDescribesEveryKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New(Options[string]{RateLimiter: NewExponential[string](time.Second, time.Minute, 0)})
		start := time.Now()
		q.Add("busy")
		require.Equal(t, "busy", mustGet(t, q))
		q.Add("busy")
		advance(time.Second)
		q.AddWith("w2", AddOptions{Priority: 2})
		q.Add("w0")
		q.AddRateLimited("d")
		q.AddRateLimited("d") // second requeue; keeps the earlier deadline
		want := []Item[string]{
			{Key: "w2", State: Waiting, Priority: 2},
			{Key: "w0", State: Waiting},
			{Key: "d", State: Delayed, Until: start.Add(2 * time.Second), Requeues: 2},
			{Key: "busy", State: Processing, Dirty: true, Since: start},
		}
		got := q.Snapshot()
		require.Len(t, got, len(want))
		for i := range want {
			require.Equal(t, want[i].Key, got[i].Key)
			require.Equal(t, want[i].State, got[i].State)
			require.Equal(t, want[i].Dirty, got[i].Dirty)
			require.True(t, want[i].Since.Equal(got[i].Since), "%s since %v, want %v", want[i].Key, got[i].Since, want[i].Since)
			require.True(t, want[i].Until.Equal(got[i].Until), "%s until %v, want %v", want[i].Key, got[i].Until, want[i].Until)
			require.Equal(t, want[i].Priority, got[i].Priority)
			require.Equal(t, want[i].Requeues, got[i].Requeues)
		}
		require.Equal(t, "waiting", Waiting.String())
		require.Equal(t, "delayed", Delayed.String())
		require.Equal(t, "processing", Processing.String())
		require.Equal(t, "unknown", State(0).String())

		advance(time.Second)
		synctest.Wait() // let the queue's timer move "d" to ready
		s := q.Stats()
		require.Equal(t, Stats{Ready: 3, Processing: 1,
			UnfinishedWork: 2 * time.Second, LongestRunning: 2 * time.Second}, s)
	})
}

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

func TestMetricsHooks(t *testing.T) {
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
		q.AddRateLimited("c")
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
