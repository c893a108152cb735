package convergeprom_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/observe/convergeprom"
	"github.com/converge-go/converge/store"
)

func familyNames(t *testing.T, g prometheus.Gatherer) []string {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range families {
		names = append(names, f.GetName())
	}
	return names
}

// TestNothingIsRegisteredOnTheDefaultRegisterer: New, a controller, a
// queue's activity and a scrape leave prometheus.DefaultRegisterer as they
// found it, and every name of the adapter stays free there.
func TestNothingIsRegisteredOnTheDefaultRegisterer(t *testing.T) {
	before := familyNames(t, prometheus.DefaultGatherer)
	reg := prometheus.NewRegistry()
	m, err := convergeprom.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	ctl := m.Controller("quiet", convergeprom.ControllerOptions{})
	q := queue.New(queue.Options[string]{Metrics: ctl})
	q.Add("a")
	key, _ := q.Get(context.Background())
	q.Done(key)
	m.Reconciled("quiet", reconcile.Success, time.Millisecond)
	m.Converged("quiet", time.Millisecond)
	m.WriteRejected("quiet")
	m.KeyRefused("quiet")
	ours := familyNames(t, reg)
	if len(ours) == 0 {
		t.Fatal("the adapter's registry is empty")
	}
	if after := familyNames(t, prometheus.DefaultGatherer); !slices.Equal(before, after) {
		t.Fatalf("DefaultRegisterer changed: before %v, after %v", before, after)
	}
	// Every name is still free on the default registry.
	for _, n := range ours {
		probe := prometheus.NewGauge(prometheus.GaugeOpts{Name: n, Help: "probe"})
		if err := prometheus.DefaultRegisterer.Register(probe); err != nil {
			t.Fatalf("%s is taken on the default registry: %v", n, err)
		}
		prometheus.DefaultRegisterer.Unregister(probe)
	}
}

// TestNewRefusesANilRegistererAndTakenNamesRegisteringNothing: a nil
// Registerer is ErrInvalid; a registry that already holds the adapter's
// names is refused and left as it was.
func TestNewRefusesANilRegistererAndTakenNamesRegisteringNothing(t *testing.T) {
	if _, err := convergeprom.New(nil); !errors.Is(err, convergeprom.ErrInvalid) || !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("New(nil) = %v, want ErrInvalid", err)
	}
	reg := prometheus.NewRegistry()
	taken := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "workqueue_retries_total", Help: "someone else's"}, []string{"name"})
	reg.MustRegister(taken)
	taken.WithLabelValues("x").Inc()
	before := familyNames(t, reg)
	if _, err := convergeprom.New(reg); err == nil {
		t.Fatal("New on a registry holding workqueue_retries_total succeeded")
	}
	if after := familyNames(t, reg); !slices.Equal(before, after) {
		t.Fatalf("a refused New left series behind: %v, was %v", after, before)
	}
}
