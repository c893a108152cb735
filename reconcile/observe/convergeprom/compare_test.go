package convergeprom_test

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// sample is one gathered series: counters and gauges by value, histograms
// by sample count (durations differ between two runs; counts must not).
type sample struct {
	typ  dto.MetricType
	help string
	v    float64
}

// timeGauges are the gauges whose value is a duration: compared by
// presence and labels only.
var timeGauges = []string{"workqueue_unfinished_work_seconds", "workqueue_longest_running_processor_seconds"}

// crSeries gathers g's controller-runtime series (controller_runtime_*
// and workqueue_*) of the controller named controller, keyed by name and
// sorted labels.
func crSeries(t *testing.T, g prometheus.Gatherer, controller string) map[string]sample {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]sample{}
	for _, f := range families {
		name := f.GetName()
		if !strings.HasPrefix(name, "controller_runtime_") && !strings.HasPrefix(name, "workqueue_") {
			continue
		}
		for _, m := range f.GetMetric() {
			var labels []string
			mine := false
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
				mine = mine || l.GetName() == "controller" && l.GetValue() == controller
			}
			if !mine {
				continue
			}
			sort.Strings(labels)
			s := sample{typ: f.GetType(), help: f.GetHelp()}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				s.v = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				s.v = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				s.v = float64(m.GetHistogram().GetSampleCount())
			}
			out[name+"{"+strings.Join(labels, ",")+"}"] = s
		}
	}
	return out
}

// requireSameSeries fails unless got (converge's adapter) has exactly the
// names, label sets, types, help texts and counts of want
// (controller-runtime's own).
func requireSameSeries(t *testing.T, got, want map[string]sample) {
	t.Helper()
	names := func(m map[string]sample) []string {
		var ns []string
		for k := range m {
			ns = append(ns, k[:strings.IndexByte(k, '{')])
		}
		slices.Sort(ns)
		return slices.Compact(ns)
	}
	if g, w := names(got), names(want); !slices.Equal(g, w) {
		t.Errorf("metric names differ:\n adapter:            %v\n controller-runtime: %v", g, w)
	}
	keys := func(m map[string]sample) []string {
		ks := make([]string, 0, len(m))
		for k := range m {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return ks
	}
	for _, k := range keys(want) {
		g, ok := got[k]
		w := want[k]
		switch {
		case !ok:
			t.Errorf("series missing from the adapter: %s (controller-runtime: %v)", k, w.v)
		case g.typ != w.typ:
			t.Errorf("%s: type %v, controller-runtime's %v", k, g.typ, w.typ)
		case g.help != w.help:
			t.Errorf("%s: help %q, controller-runtime's %q", k, g.help, w.help)
		case g.v != w.v && !slices.Contains(timeGauges, k[:strings.IndexByte(k, '{')]):
			t.Errorf("%s: adapter %v, controller-runtime %v", k, g.v, w.v)
		}
	}
	for _, k := range keys(got) {
		if _, ok := want[k]; !ok {
			t.Errorf("series the adapter has and controller-runtime does not: %s = %v", k, got[k].v)
		}
	}
}

// value is the value (or histogram sample count) of the series named name
// of controller in g, summed over its other labels.
func value(t *testing.T, g prometheus.Gatherer, controller, name string) float64 {
	t.Helper()
	var sum float64
	for k, s := range crSeries(t, g, controller) {
		if strings.HasPrefix(k, name+"{") {
			sum += s.v
		}
	}
	return sum
}

// eventually polls cond until it holds or a generous deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}
