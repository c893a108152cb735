package convergeprom_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile/observe/convergeprom"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// runs numbers the runs of the comparison tests (see go test -count).
var runs atomic.Int64

// testQueue is what the workqueue sequence drives: converge's queue or
// controller-runtime's.
type testQueue interface {
	Add(key string)
	AddAfter(key string, d time.Duration)
	AddRateLimited(key string)
	Done(key string)
	get(t *testing.T) string
}

type convergeQueue struct{ *queue.Queue[string] }

func (q convergeQueue) AddAfter(key string, d time.Duration) {
	q.AddWith(key, queue.AddOptions{After: d})
}

func (q convergeQueue) AddRateLimited(key string) {
	q.AddWith(key, queue.AddOptions{RateLimited: true})
}

func (q convergeQueue) get(t *testing.T) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	key, err := q.Get(ctx)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	return key
}

type crQueue struct {
	priorityqueue.PriorityQueue[string]
}

func (q crQueue) get(t *testing.T) string {
	got := make(chan string, 1)
	go func() {
		key, _ := q.Get()
		got <- key
	}()
	select {
	case key := <-got:
		return key
	case <-time.After(30 * time.Second):
		t.Fatal("Get: timed out")
		return ""
	}
}

// workqueueSequence drives q through duplicate adds, delayed adds (one
// zero, one later than a pending one, one of a key already ready, one of a
// key processing), a rate-limited add, and an add of a processing key, and
// hands out every key until the 7 hand-outs they make are done.
func workqueueSequence(t *testing.T, q testQueue) {
	q.Add("a")
	q.Add("a") // deduplicated
	q.Add("b")
	q.AddAfter("e", 0)                   // ready at once: an add, not a retry
	q.AddAfter("c", 30*time.Millisecond) // a retry; an add when ready
	q.AddAfter("c", 60*time.Millisecond) // a retry; keeps the earlier deadline
	q.AddAfter("a", 10*time.Millisecond) // a retry; a is ready already
	q.AddRateLimited("d")                // a retry; an add when ready
	handled := map[string]int{}
	for range 7 {
		key := q.get(t)
		handled[key]++
		switch {
		case key == "a" && handled[key] == 1:
			q.Add("a") // processing: due again after Done, an add
			q.Add("a") // deduplicated
		case key == "b" && handled[key] == 1:
			q.AddAfter("b", 20*time.Millisecond) // processing: a retry, an add when ready
		}
		q.Done(key)
	}
	want := map[string]int{"a": 2, "b": 2, "c": 1, "d": 1, "e": 1}
	for k, n := range want {
		if handled[k] != n {
			t.Fatalf("hand-outs %v, want %v", handled, want)
		}
	}
}

// TestWorkqueueSeriesMatchControllerRuntimesForTheSameAdds: the same adds
// (duplicate, delayed, rate-limited, of a processing key) and hand-outs
// through converge's queue measured by the adapter and through
// controller-runtime's own workqueue measured by controller-runtime give
// the same workqueue series: names, label sets, help, counts.
func TestWorkqueueSeriesMatchControllerRuntimesForTheSameAdds(t *testing.T) {
	name := fmt.Sprintf("cmp-queue-%d", runs.Add(1)) // see TestReconcileSeries…
	reg := prometheus.NewRegistry()
	m, err := convergeprom.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	cq := queue.New(queue.Options[string]{Metrics: m.Controller(name, convergeprom.ControllerOptions{})})
	defer cq.ShutDown()
	workqueueSequence(t, convergeQueue{cq})

	pq := priorityqueue.New[string](name)
	defer pq.ShutDown()
	workqueueSequence(t, crQueue{pq})

	// The scenario is the one intended: controller-runtime's own counts.
	for metric, want := range map[string]float64{"workqueue_adds_total": 7, "workqueue_retries_total": 5, "workqueue_queue_duration_seconds": 7, "workqueue_depth": 0} {
		if got := value(t, crmetrics.Registry, name, metric); got != want {
			t.Errorf("controller-runtime's %s = %v, the scenario expects %v", metric, got, want)
		}
	}
	want := crSeries(t, crmetrics.Registry, name)
	got := crSeries(t, reg, name)
	if len(want) == 0 {
		t.Fatal("controller-runtime produced no series")
	}
	// Adapter series of the controller layer are not the queue's concern:
	// compare the workqueue series only.
	for k := range got {
		if k[:len("workqueue_")] != "workqueue_" {
			delete(got, k)
		}
	}
	requireSameSeries(t, got, want)
}
