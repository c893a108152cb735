package convergeprom_test

import (
	"context"
	"maps"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/observe/convergeprom"
	"github.com/converge-go/converge/reconcile/shard"
	"github.com/converge-go/converge/reconcile/shard/shardtest"
	"github.com/converge-go/converge/store"
)

// handovers returns the sample count of every
// converge_shard_handover_duration_seconds series ("replica kind" → count),
// and checks the histogram's buckets span 1 ms to 60 s.
func handovers(t *testing.T, g prometheus.Gatherer) map[string]uint64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, f := range families {
		if f.GetName() != "converge_shard_handover_duration_seconds" {
			continue
		}
		if f.GetType() != dto.MetricType_HISTOGRAM {
			t.Fatalf("handover_duration_seconds is a %v", f.GetType())
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			h := m.GetHistogram()
			bs := h.GetBucket()
			if len(bs) == 0 || bs[0].GetUpperBound() != 0.001 || bs[len(bs)-1].GetUpperBound() != 60 {
				t.Errorf("handover buckets %v, want 1 ms to 60 s", bs)
			}
			out[labels["replica"]+" "+labels["kind"]] = h.GetSampleCount()
		}
	}
	return out
}

// requireSeries compares the gathered series named names with want, in the
// text exposition format.
func requireSeries(t *testing.T, g prometheus.Gatherer, want string, names ...string) {
	t.Helper()
	if err := testutil.GatherAndCompare(g, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
}

const ownedHelp = `# HELP converge_shard_buckets_owned Buckets of keys the shard replica owns
# TYPE converge_shard_buckets_owned gauge
`

const ownerlessHelp = `# HELP converge_shard_ownerless_buckets Buckets of keys that no shard replica works on, as the controller's replica sees them (Health().Ownerless)
# TYPE converge_shard_ownerless_buckets gauge
`

// TestShardSeriesFollowRealReplicasThroughAJoinAndACrash: two replicas
// over one memory store report buckets_owned (16, then 8 and 8 after a
// join), a handover per bucket taken by kind (16 initial, 8 planned, then
// 8 takeover after the second replica crashes, its store unreachable), 0
// owned for the crashed one; a watched sharded controller's
// ownerless_buckets is 0, then 8 while the crashed replica's buckets wait,
// then 0 again.
func TestShardSeriesFollowRealReplicasThroughAJoinAndACrash(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		m, err := convergeprom.New(reg)
		if err != nil {
			t.Fatal(err)
		}
		raw := store.NewMemory[[]byte]()
		opts := shard.Options{ID: "a", Buckets: 16, TTL: 2 * time.Second, Metrics: m}
		a := shardtest.Start(t, raw, opts)
		defer a.Stop()
		rec := reconcile.ReconcilerFunc[string](func(context.Context, reconcile.Request[string]) (reconcile.Result, error) {
			return reconcile.Result{}, nil
		})
		c, err := reconcile.New(store.NewView[string](raw, nil), rec, reconcile.Options[string]{Name: "items", Prefix: "items/", Shard: a.Replica, Metrics: m})
		if err != nil {
			t.Fatal(err)
		}
		m.Controller("items", convergeprom.ControllerOptions{}).Watch(c)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		defer func() { cancel(); <-done }()
		time.Sleep(5 * time.Second)
		requireSeries(t, reg, ownedHelp+`converge_shard_buckets_owned{replica="a"} 16
`, "converge_shard_buckets_owned")

		opts.ID = "b"
		b := shardtest.Start(t, raw, opts)
		time.Sleep(5 * time.Second)
		requireSeries(t, reg, ownedHelp+`converge_shard_buckets_owned{replica="a"} 8
converge_shard_buckets_owned{replica="b"} 8
`+ownerlessHelp+`converge_shard_ownerless_buckets{controller="items"} 0
`, "converge_shard_buckets_owned", "converge_shard_ownerless_buckets")
		if got, want := handovers(t, reg), map[string]uint64{"a initial": 16, "b planned": 8}; !maps.Equal(got, want) {
			t.Fatalf("handovers after a join %v, want %v", got, want)
		}

		b.Crash()
		most := 0.0
		for range 2 * 2 * time.Second / (50 * time.Millisecond) {
			time.Sleep(50 * time.Millisecond)
			most = max(most, gathered(t, reg, "converge_shard_ownerless_buckets"))
		}
		if most != 8 {
			t.Errorf("ownerless_buckets peaked at %v while the crashed replica's 8 buckets waited, want 8", most)
		}
		requireSeries(t, reg, ownedHelp+`converge_shard_buckets_owned{replica="a"} 16
converge_shard_buckets_owned{replica="b"} 0
`+ownerlessHelp+`converge_shard_ownerless_buckets{controller="items"} 0
`, "converge_shard_buckets_owned", "converge_shard_ownerless_buckets")
		if got, want := handovers(t, reg), map[string]uint64{"a initial": 16, "b planned": 8, "a takeover": 8}; !maps.Equal(got, want) {
			t.Fatalf("handovers after a crash %v, want %v", got, want)
		}
	})
}

// gathered is the value of the one gauge named name in g.
func gathered(t *testing.T, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no single series %s", name)
	return 0
}

// TestAnUnshardedControllerHasNoOwnerlessSeries: a watched controller
// without a Sharder adds no converge_shard_ownerless_buckets series.
func TestAnUnshardedControllerHasNoOwnerlessSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := convergeprom.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := reconcile.New(store.NewMemory[string](), reconcile.ReconcilerFunc[string](
		func(context.Context, reconcile.Request[string]) (reconcile.Result, error) {
			return reconcile.Result{}, nil
		}),
		reconcile.Options[string]{Name: "plain"})
	if err != nil {
		t.Fatal(err)
	}
	m.Controller("plain", convergeprom.ControllerOptions{}).Watch(c)
	if n, err := testutil.GatherAndCount(reg, "converge_shard_ownerless_buckets"); err != nil || n != 0 {
		t.Fatalf("%d ownerless series (%v), want none", n, err)
	}
}
