package convergeprom_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/observe/convergeprom"
	"github.com/converge-go/converge/store"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// step is what a scripted reconcile does.
type step int

const (
	succeed step = iota
	requeue
	requeueAfter
	fail
	failTerminally
	panicking
	gated // waits for the script's gate, then succeeds
)

// script hands each key's reconciles their steps in order, and reports
// every call.
type script struct {
	mu    sync.Mutex
	steps map[string][]step
	calls chan string
	gate  chan struct{}
	open  sync.Once
}

// release opens the gate (once).
func (s *script) release() { s.open.Do(func() { close(s.gate) }) }

func newScript() *script {
	return &script{
		steps: map[string][]step{
			"gate":    {gated, succeed},
			"ok":      {succeed},
			"dup":     {succeed},
			"requeue": {requeue, succeed},
			"after":   {requeueAfter, succeed},
			"err":     {fail, succeed},
			"term":    {failTerminally},
			"panic":   {panicking, succeed},
		},
		calls: make(chan string, 100),
		gate:  make(chan struct{}),
	}
}

// next returns key's next step; a key past its script succeeds.
func (s *script) next(key string) step {
	s.mu.Lock()
	st := succeed
	if steps := s.steps[key]; len(steps) > 0 {
		st, s.steps[key] = steps[0], steps[1:]
	}
	s.mu.Unlock()
	s.calls <- key
	if st == gated {
		<-s.gate
		st = succeed
	}
	return st
}

// scriptCalls is how many reconciles the script makes.
const scriptCalls = 13

// controllerSequence drives a controller: enqueue adds a key. While the
// only worker holds "gate", it adds "gate" again (a processing key), a
// key three times, and keys whose reconciles succeed, requeue, requeue
// after a delay, fail, fail terminally and panic (then succeed), and waits
// until every reconcile is done.
func controllerSequence(t *testing.T, s *script, enqueue func(string), g prometheus.Gatherer, name string) {
	defer s.release() // a failed wait must not leave the worker blocked
	enqueue("gate")
	if key := <-s.calls; key != "gate" {
		t.Fatalf("first reconcile of %q, want gate", key)
	}
	for _, key := range []string{"gate", "ok", "dup", "dup", "dup", "requeue", "after", "err", "term", "panic"} {
		enqueue(key)
	}
	// controller-runtime's queue takes adds in asynchronously: let them
	// all in before the worker is free, so that "dup" is deduplicated.
	eventually(t, "the adds to be counted", func() bool { return value(t, g, name, "workqueue_adds_total") == 9 })
	s.release()
	for range scriptCalls - 1 {
		<-s.calls
	}
	eventually(t, "the reconciles to be done", func() bool {
		return value(t, g, name, "controller_runtime_reconcile_time_seconds") == scriptCalls &&
			value(t, g, name, "workqueue_work_duration_seconds") == scriptCalls &&
			value(t, g, name, "controller_runtime_active_workers") == 0
	})
	select {
	case key := <-s.calls:
		t.Fatalf("unexpected reconcile of %q", key)
	default:
	}
}

// runConverge runs the sequence through a converge controller measured by
// the adapter on reg.
func runConverge(t *testing.T, name string, reg *prometheus.Registry) {
	m, err := convergeprom.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	s := newScript()
	rec := reconcile.ReconcilerFunc[string](func(_ context.Context, req reconcile.Request[string]) (reconcile.Result, error) {
		switch s.next(req.Key) {
		case requeue:
			return reconcile.Result{Requeue: true}, nil
		case requeueAfter:
			return reconcile.Result{RequeueAfter: 10 * time.Millisecond}, nil
		case fail:
			return reconcile.Result{}, errors.New("transient")
		case failTerminally:
			return reconcile.Result{}, reconcile.Terminal(errors.New("hopeless"))
		case panicking:
			panic("boom")
		}
		return reconcile.Result{}, nil
	})
	opts := reconcile.Options[string]{Name: name, Workers: 1}
	ctl := convergeprom.Instrument(m, &opts)
	c, err := reconcile.New(store.NewMemory[string](), rec, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctl.Watch(c)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	if err := c.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	controllerSequence(t, s, func(key string) {
		if err := c.Enqueue(key); err != nil {
			t.Error(err)
		}
	}, reg, name)
}

// runControllerRuntime runs the sequence through controller-runtime's own
// controller, measured by controller-runtime on its registry.
func runControllerRuntime(t *testing.T, name string) {
	s := newScript()
	rec := crreconcile.TypedFunc[string](func(_ context.Context, key string) (crreconcile.Result, error) {
		switch s.next(key) {
		case requeue:
			//lint:ignore SA1019 the deprecated Requeue is still counted by controller-runtime
			return crreconcile.Result{Requeue: true}, nil
		case requeueAfter:
			return crreconcile.Result{RequeueAfter: 10 * time.Millisecond}, nil
		case fail:
			return crreconcile.Result{}, errors.New("transient")
		case failTerminally:
			return crreconcile.Result{}, crreconcile.TerminalError(errors.New("hopeless"))
		case panicking:
			panic("boom")
		}
		return crreconcile.Result{}, nil
	})
	skip, recoverPanic := true, true
	c, err := crcontroller.NewTypedUnmanaged[string](name, crcontroller.TypedOptions[string]{
		Reconciler: rec, MaxConcurrentReconciles: 1, Logger: logr.Discard(),
		SkipNameValidation: &skip, RecoverPanic: &recoverPanic,
	})
	if err != nil {
		t.Fatal(err)
	}
	queues := make(chan workqueue.TypedRateLimitingInterface[string], 1)
	err = c.Watch(source.TypedFunc[string](func(_ context.Context, q workqueue.TypedRateLimitingInterface[string]) error {
		queues <- q
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	q := <-queues
	controllerSequence(t, s, q.Add, crmetrics.Registry, name)
}

// TestReconcileSeriesMatchControllerRuntimesForTheSameOutcomes: the same
// adds (a duplicate, one of a processing key) and reconciles ending in
// success, requeue, requeue after, error, terminal error and panic, then
// their retries, through a converge controller measured by the adapter and
// through controller-runtime's own controller measured by
// controller-runtime, give the same controller_runtime_* and workqueue_*
// series: names, label sets, help, counts and histogram sample counts.
func TestReconcileSeriesMatchControllerRuntimesForTheSameOutcomes(t *testing.T) {
	// controller-runtime's registry is global: a name of its own per run
	// (go test -count) keeps the runs apart.
	name := fmt.Sprintf("cmp-controller-%d", runs.Add(1))
	reg := prometheus.NewRegistry()
	runConverge(t, name, reg)
	runControllerRuntime(t, name)

	// The scenario is the one intended: controller-runtime's own counts.
	for metric, want := range map[string]float64{
		"controller_runtime_reconcile_total":                 scriptCalls,
		"controller_runtime_reconcile_errors_total":          3,
		"controller_runtime_terminal_reconcile_errors_total": 1,
		"controller_runtime_reconcile_panics_total":          1,
		"workqueue_adds_total":                               13,
		"workqueue_retries_total":                            4,
	} {
		if got := value(t, crmetrics.Registry, name, metric); got != want {
			t.Errorf("controller-runtime's %s = %v, the scenario expects %v", metric, got, want)
		}
	}
	requireSameSeries(t, crSeries(t, reg, name), crSeries(t, crmetrics.Registry, name))
}
