package shard

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/store"
)

// planLog records, on the test's clock, when each plan was written.
type planLog struct {
	c    *cluster
	ch   chan planAt
	stop func()
}

type planAt struct {
	at   time.Time
	plan planRecord
}

func watchPlans(t *testing.T, c *cluster) *planLog {
	ctx, cancel := context.WithCancel(context.Background())
	plans := store.NewView[planRecord](c.raw, nil)
	w, err := plans.Watch(ctx, keys{prefix: DefaultPrefix}.plan(), 0)
	if err != nil {
		t.Fatal(err)
	}
	l := &planLog{c: c, ch: make(chan planAt, 1000)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.Events() {
			if ev.Type != store.Deleted {
				l.ch <- planAt{at: time.Now(), plan: ev.Object.Value}
			}
		}
	}()
	l.stop = func() { cancel(); w.Stop(); <-done }
	return l
}

// latest drains the log and returns the last plan written.
func (l *planLog) latest() (planAt, bool) {
	var p planAt
	got := false
	for {
		select {
		case p = <-l.ch:
			got = true
		default:
			return p, got
		}
	}
}

// keysCoveringBuckets returns keys such that every bucket holds one.
func keysCoveringBuckets(buckets int) []string {
	var ks []string
	seen := map[int]bool{}
	for i := 0; len(seen) < buckets; i++ {
		k := fmt.Sprintf("items/h%05d", i)
		if b := Bucket(k, buckets); !seen[b] {
			seen[b] = true
			ks = append(ks, k)
		}
	}
	return ks
}

// handovers returns, for every bucket whose target differs between old
// and new, the time from the decision (new's write) to the new owner's
// first reconcile of the bucket after it; missing lists buckets whose new
// owner had not reconciled them by now.
func (c *cluster) handovers(old, new planAt) (took []time.Duration, missing []int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for b := range new.plan.Owners {
		from, _ := old.plan.target(b)
		to, ok := new.plan.target(b)
		if !ok || from.ID == to.ID {
			continue
		}
		found := false
		for _, f := range c.firsts[b] {
			if f.id == to.ID && !f.at.Before(new.at) {
				took = append(took, f.at.Sub(new.at))
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, b)
		}
	}
	return took, missing
}

// quantiles formats min, p50, p99 and max of ds.
func quantiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	slices.Sort(ds)
	q := func(p float64) time.Duration { return ds[min(len(ds)-1, int(p*float64(len(ds))))] }
	return fmt.Sprintf("n=%d min %v p50 %v p99 %v max %v", len(ds), ds[0], q(0.5), q(0.99), ds[len(ds)-1])
}

// handoverCluster starts n replicas whose store calls take rtt, over keys
// covering every bucket, and logs the plans.
func handoverCluster(t *testing.T, opts Options, seed, n int, rtt time.Duration) (*cluster, []*node, *planLog) {
	c := newCluster(t, opts, 5*time.Millisecond)
	for _, k := range keysCoveringBuckets(opts.Buckets) {
		c.bump(k)
	}
	var nodes []*node
	for i := range n {
		nd := c.start(fmt.Sprint("r", i), uint64(seed*10+i))
		nd.latency.Store(int64(rtt))
		nodes = append(nodes, nd)
	}
	return c, nodes, watchPlans(t, c)
}

// TestPlannedHandoverReachesTheNewOwnerWithinDrainPlusRoundTrips: when a
// replica joins, every bucket the plan moves to it is reconciled by it
// within Drain plus a few store round trips (2 ms each here) of the
// plan's write, over 20 joins.
func TestPlannedHandoverReachesTheNewOwnerWithinDrainPlusRoundTrips(t *testing.T) {
	var all []time.Duration
	const rtt = 2 * time.Millisecond
	opts := Options{Buckets: 64, TTL: 2 * time.Second}
	for seed := range 20 {
		synctest.Test(t, func(t *testing.T) {
			c, _, log := handoverCluster(t, opts, seed, 3+seed%3, rtt)
			defer c.det.stop()
			defer log.stop()
			time.Sleep(10 * time.Second)
			before, _ := log.latest()
			c.start("new", uint64(seed)).latency.Store(int64(rtt))
			time.Sleep(10 * time.Second)
			after, ok := log.latest()
			if !ok {
				t.Fatal("no plan written after a join")
			}
			took, missing := c.handovers(before, after)
			if len(missing) > 0 || len(took) == 0 {
				t.Fatalf("buckets %v moved to the new replica were never reconciled by it (%d were)", missing, len(took))
			}
			for _, d := range took {
				if d > DefaultDrain+20*rtt {
					t.Errorf("planned handover took %v > Drain + 20 round trips", d)
				}
			}
			all = append(all, took...)
			for _, n := range c.running() {
				c.stop(n)
			}
		})
	}
	t.Logf("planned handover (join; Drain %v, store round trip %v), plan write → new owner's first reconcile: %s", DefaultDrain, rtt, quantiles(all))
}

// TestCrashedReplicasBucketsAreTakenOverWithinTTLPlusBound: when a replica
// crashes (its store unreachable, nothing released), each of its buckets
// is reconciled by its new owner within TTL + 1 s of the crash, over 20
// crashes.
func TestCrashedReplicasBucketsAreTakenOverWithinTTLPlusBound(t *testing.T) {
	var all []time.Duration
	const rtt = 2 * time.Millisecond
	opts := Options{Buckets: 64, TTL: 2 * time.Second}
	for seed := range 20 {
		synctest.Test(t, func(t *testing.T) {
			c, nodes, log := handoverCluster(t, opts, seed, 4, rtt)
			defer c.det.stop()
			defer log.stop()
			// Crash at a random point of the victim's renewal cycle.
			time.Sleep(10*time.Second + time.Duration(seed)*opts.TTL/60)
			before, _ := log.latest()
			victim := nodes[seed%4]
			crashed := time.Now()
			c.crash(victim)
			time.Sleep(4 * opts.TTL)
			after, ok := log.latest()
			if !ok {
				t.Fatal("no plan written after a crash")
			}
			after.at = crashed // measure from the crash
			took, missing := c.handovers(before, after)
			if len(missing) > 0 || len(took) == 0 {
				t.Fatalf("buckets %v of the crashed replica were never reconciled by their new owner (%d were)", missing, len(took))
			}
			for _, d := range took {
				if d > opts.TTL+time.Second {
					t.Errorf("crash takeover took %v > TTL + 1 s", d)
				}
			}
			all = append(all, took...)
			for _, n := range c.running() {
				c.stop(n)
			}
		})
	}
	t.Logf("crash takeover (TTL %v, store round trip %v), crash → new owner's first reconcile: %s", opts.TTL, rtt, quantiles(all))
}
