package shard

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/store/faultstore"
)

// schedules is how many randomized schedules the exclusivity test runs:
// a few in CI, CONVERGE_SHARD_SCHEDULES of them when set.
func schedules(t *testing.T) int {
	if v := os.Getenv("CONVERGE_SHARD_SCHEDULES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("CONVERGE_SHARD_SCHEDULES=%q: want a positive count", v)
		}
		return n
	}
	return 4
}

// TestNoKeyIsReconciledByTwoReplicasAndNoDeposedOwnerWriteIsAccepted runs
// randomized schedules of 3 to 5 replicas, each with a controller, over
// one store: crashes, pauses beyond the TTL whose store calls land late,
// loud and silent outages, flaky stores (errors, delays), joins, leaves
// and restarts, while the wanted state keeps changing. A detector shared
// by every replica fails the test if a key is reconciled by two at once,
// and a checker following the store's history fails it if a write signed
// by a replica was accepted while the key's bucket was not that replica's
// (in its current membership term). Once the faults are healed, every
// bucket has an owner and every key converges.
func TestNoKeyIsReconciledByTwoReplicasAndNoDeposedOwnerWriteIsAccepted(t *testing.T) {
	n := schedules(t)
	faults := map[string]int{}
	acts, writes, refused := 0, 0, 0
	for seed := range n {
		ok := t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a, w, r := runSchedule(t, uint64(seed), faults)
				acts += a
				writes += w
				refused += r
			})
		})
		if !ok {
			break
		}
	}
	t.Logf("%d schedules: %d reconciles checked for overlap, %d accepted writes checked against the owner records, %d late writes refused by a guard; faults: %v", n, acts, writes, refused, faults)
}

func runSchedule(t *testing.T, seed uint64, faults map[string]int) (acts, writes, refused int) {
	rng := rand.New(rand.NewPCG(seed, 1))
	ttl := 2 * time.Second
	c := newCluster(t, Options{Buckets: 32, TTL: ttl, Drain: 100 * time.Millisecond}, time.Duration(20+rng.IntN(200))*time.Millisecond)
	defer c.det.stop()
	const keys = 40
	for i := range keys {
		c.bump(fmt.Sprintf("items/k%02d", i))
	}
	ids := []string{"r0", "r1", "r2", "r3", "r4"}
	for _, id := range ids[:3+rng.IntN(3)] {
		c.start(id, rng.Uint64())
	}
	time.Sleep(time.Duration(rng.IntN(3000)) * time.Millisecond)
	for range 10 {
		for range 1 + rng.IntN(8) {
			c.bump(fmt.Sprintf("items/k%02d", rng.IntN(keys)))
		}
		live := c.running()
		var victim *node
		if len(live) > 0 {
			victim = live[rng.IntN(len(live))]
		}
		absent := ""
		for _, id := range ids {
			if !c.has(id) {
				absent = id
				break
			}
		}
		kind := []string{"crash", "pause", "loud", "silent", "hang", "flaky", "join", "leave", "none"}[rng.IntN(9)]
		if victim == nil || len(live) <= 1 && kind != "join" && kind != "none" && kind != "flaky" {
			kind = "join"
		}
		if kind == "join" && absent == "" {
			kind = "none"
		}
		faults[kind]++
		d := time.Duration(500+rng.IntN(3*int(ttl/time.Millisecond))) * time.Millisecond
		switch kind {
		case "crash":
			c.crash(victim)
		case "pause":
			victim.pauseUntil.Store(time.Now().Add(ttl + d).UnixNano())
		case "loud", "silent", "hang":
			victim.fs.SetOutage(map[string]faultstore.Outage{"loud": faultstore.Loud, "silent": faultstore.Silent, "hang": faultstore.SilentHang}[kind])
			time.AfterFunc(d, func() { victim.fs.SetOutage(faultstore.Up) })
		case "flaky":
			victim.flaky.Store(true)
			time.AfterFunc(d, func() { victim.flaky.Store(false) })
		case "join":
			c.start(absent, rng.Uint64())
		case "leave":
			c.stop(victim)
		}
		time.Sleep(time.Duration(rng.IntN(int(2*ttl/time.Millisecond))) * time.Millisecond)
	}
	// Heal: every outage and pause ends; one replica at least runs.
	time.Sleep(5 * ttl)
	if len(c.running()) == 0 {
		c.start("r0", rng.Uint64())
	}
	deadline := time.Now().Add(20 * ttl)
	for {
		ok, why := c.converged()
		live := c.running()
		st := live[0].rep.Status()
		if ok && len(st.Ownerless) == 0 && len(st.Members) == len(live) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not converged %v after healing: %s; ownerless %v; plan members %v, running %d", 20*ttl, why, st.Ownerless, st.Members, len(live))
		}
		time.Sleep(ttl / 4)
	}
	for _, n := range c.running() {
		c.stop(n)
	}
	synctest.Wait()
	c.det.mu.Lock()
	defer c.det.mu.Unlock()
	return c.det.acts, c.det.writes, c.det.refused
}
