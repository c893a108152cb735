package shard

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/store/faultstore"
)

// traffic is one replica's store traffic for the sharding records.
type traffic struct {
	reads, writes, watches, events int64
}

func (n *node) traffic() traffic {
	var t traffic
	for i := range n.ops {
		op := faultstore.Op(1 << i)
		k := n.ops[i].Load()
		switch {
		case op == faultstore.OpWatch:
			t.watches += k
		case op&faultstore.OpWrites != 0:
			t.writes += k
		default:
			t.reads += k
		}
	}
	t.events = n.rep.ownerM.received() + n.rep.planM.received() + n.rep.memberM.received()
	return t
}

func (t traffic) sub(u traffic) traffic {
	return traffic{t.reads - u.reads, t.writes - u.writes, t.watches - u.watches, t.events - u.events}
}

// measureTraffic runs n replicas over keys keys and B buckets and returns
// the mean per-replica sharding traffic while they start and settle
// (30 s), and in the following idle minute.
func measureTraffic(t *testing.T, n, buckets, keys int) (start, idle traffic) {
	synctest.Test(t, func(t *testing.T) {
		c := newClusterHistory(t, Options{Buckets: buckets, TTL: 3 * time.Second}, time.Millisecond, false)
		defer c.det.stop()
		for i := range keys {
			c.bump(fmt.Sprintf("items/t%06d", i))
		}
		// The replicas join one by one, a few seconds apart, in one order:
		// how many buckets move twice depends on the order of the joins,
		// which would otherwise be the scheduler's.
		const apart = 5 * time.Second
		for i := range n {
			c.start(fmt.Sprint("r", i), uint64(i))
			<-time.After(apart)
		}
		<-time.After(30*time.Second - time.Duration(n)*apart)
		if ok, why := c.converged(); !ok {
			t.Fatalf("not converged: %s", why)
		}
		nodes := c.running()
		mid := make([]traffic, len(nodes))
		for i, nd := range nodes {
			mid[i] = nd.traffic()
			start.reads += mid[i].reads
			start.writes += mid[i].writes
			start.watches += mid[i].watches
			start.events += mid[i].events
		}
		time.Sleep(time.Minute) // the bubble's fake clock
		for i, nd := range nodes {
			d := nd.traffic().sub(mid[i])
			idle.reads += d.reads
			idle.writes += d.writes
			idle.watches += d.watches
			idle.events += d.events
		}
		for _, nd := range nodes {
			c.stop(nd)
		}
		k := int64(len(nodes))
		start = traffic{start.reads / k, start.writes / k, start.watches / k, start.events / k}
		idle = traffic{idle.reads / k, idle.writes / k, idle.watches / k, idle.events / k}
	})
	return start, idle
}

// TestShardingTrafficGrowsWithReplicasAndBucketsNotKeys: the calls and
// watch events each replica spends on the sharding records are the same
// for 100 keys and 2,000 keys once settled; they grow with the bucket
// count (at start, one owner record per bucket) and with the replica count (member
// renewals every replica follows).
func TestShardingTrafficGrowsWithReplicasAndBucketsNotKeys(t *testing.T) {
	type run struct{ n, b, k int }
	runs := []run{{3, 64, 100}, {3, 64, 2000}, {6, 64, 100}, {3, 256, 100}}
	got := map[run][2]traffic{}
	for _, r := range runs {
		s, i := measureTraffic(t, r.n, r.b, r.k)
		got[r] = [2]traffic{s, i}
		t.Logf("replicas %d, buckets %4d, keys %4d: per replica, start (30 s): reads %d writes %d watches %d events %d; idle minute: reads %d writes %d watches %d events %d",
			r.n, r.b, r.k, s.reads, s.writes, s.watches, s.events, i.reads, i.writes, i.watches, i.events)
	}
	few, many := got[run{3, 64, 100}], got[run{3, 64, 2000}]
	// The start depends on when each replica joins (each join moves
	// buckets), not on keys; the idle minute is steady.
	if a, b := few[1], many[1]; float64(b.reads+b.writes+b.events) > 1.1*float64(a.reads+a.writes+a.events) {
		t.Errorf("idle sharding traffic grew with keys: %+v for 100 keys, %+v for 2,000", a, b)
	}
	// Four times the buckets: at least 1.4 times the start traffic. Not
	// four times: member renewals and plan writes are a fixed part, and the
	// order in which replicas join decides how many buckets move twice.
	// With the joins in the order measureTraffic makes: 2.5 times.
	if s := got[run{3, 256, 100}][0]; 10*(s.writes+s.events) < 14*(few[0].writes+few[0].events) {
		t.Errorf("start traffic did not grow with buckets: %+v for 64, %+v for 256", few[0], got[run{3, 256, 100}][0])
	}
	if got[run{6, 64, 100}][1].events <= few[1].events {
		t.Errorf("idle events did not grow with replicas: %+v for 3, %+v for 6", few[1], got[run{6, 64, 100}][1])
	}
}
