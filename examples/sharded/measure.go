package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/converge-go/converge/examples/internal/demo"
	"github.com/converge-go/converge/internal/cputime"
	"github.com/converge-go/converge/internal/ctxtime"
	"github.com/converge-go/converge/reconcile/shard"
)

// Measurement parameters.
const (
	maxReplicas     = 4
	warmUp          = time.Second
	window          = 3 * time.Second
	windows         = 3
	handoverTimes   = 5
	handoverWorkers = 16
)

// Measure prints the figures of README.md: throughput with 1 to 4
// replica processes, and the handover times on real processes.
func Measure(ctx context.Context, cfg Config) error {
	cfg = cfg.withDefaults()
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(cfg.Out, "sharded -measure, %s, %d CPUs, load average %s", time.Now().UTC().Format(time.RFC3339), runtime.NumCPU(), load)
	fmt.Fprintf(cfg.Out, "%d keys, %d buckets, %d workers per replica, %v of pretend I/O per reconcile, TTL %v\n",
		cfg.Keys, cfg.Buckets, cfg.Workers, cfg.IO, cfg.TTL)
	var rates []float64
	for n := 1; n <= maxReplicas; n++ {
		rate, err := steadyRate(ctx, cfg, n)
		if err != nil {
			return err
		}
		rates = append(rates, rate)
		fmt.Fprintf(cfg.Out, "throughput, %d replicas: %.0f reconciles/s (median of %d windows of %v), %.2f of linear\n",
			n, rate, windows, window, rate/(float64(n)*rates[0]))
	}
	return handovers(ctx, cfg)
}

// steadyRate runs n replicas in churn mode (every reconcile waits its
// I/O, writes and requeues its key; with cfg.NoWrites, it only waits and
// requeues) and returns the median over windows of the fleet's accepted
// writes per second (with cfg.NoWrites: reconciles ended well).
func steadyRate(ctx context.Context, cfg Config, n int) (rate float64, err error) {
	cfg.Churn = true
	s, err := openSession(ctx, cfg)
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, s.close(ctx)) }()
	var ids []string
	for i := range n {
		id := fmt.Sprintf("replica-%d", i+1)
		if err := s.fleet.start(id); err != nil {
			return 0, err
		}
		ids = append(ids, id)
	}
	if _, err := s.waitBalanced(ctx, "the buckets to spread", ids); err != nil {
		return 0, err
	}
	start := time.Now().Add(warmUp)
	if err := ctxtime.Sleep(ctx, warmUp); err != nil {
		return 0, err
	}
	replicasBefore, selfBefore := s.fleet.cpu(), cputime.Process()
	if err := ctxtime.Sleep(ctx, windows*window); err != nil {
		return 0, err
	}
	replicasCPU, self := s.fleet.cpu()-replicasBefore, cputime.Process()-selfBefore
	if err := ctxtime.Sleep(ctx, 100*time.Millisecond); err != nil { // the last records
		return 0, err
	}
	recs, err := s.records()
	if err != nil {
		return 0, err
	}
	counts := make([]int, windows)
	for _, r := range recs {
		counted := r.Kind == kindWrite
		if cfg.NoWrites {
			counted = r.Kind == kindEnd && r.Note == outOK
		}
		if !counted || r.At.Before(start) {
			continue
		}
		if w := int(r.At.Sub(start) / window); w < windows {
			counts[w]++
		}
	}
	slices.Sort(counts)
	rate = float64(counts[windows/2]) / window.Seconds()
	span := (windows * window).Seconds()
	fmt.Fprintf(s.cfg.Out, "  %d replicas: CPU used: replicas %.2f cores, etcd and this process %.2f cores; %.2f ms of CPU per reconcile in all\n",
		n, replicasCPU.Seconds()/span, self.Seconds()/span, 1000*(replicasCPU+self).Seconds()/(rate*span))
	return rate, nil
}

// handovers measures, with 4 replicas on a converged world, the time to
// the new owner's first reconcile of each moved bucket: planned handovers
// when a replica joins (from the old owner's decision to hand the bucket
// over), takeovers when one leaves (from its SIGTERM) and when one is
// killed (from its SIGKILL).
func handovers(ctx context.Context, cfg Config) (err error) {
	// Many workers, as an I/O-bound controller would run: a replica that
	// takes a quarter of the keys reconciles them all at once, and the
	// first reconcile of a bucket waits behind the others' in its queue.
	cfg.Workers = max(cfg.Workers, handoverWorkers)
	fmt.Fprintf(cfg.Out, "handovers: 4 replicas, %d workers each, on a converged world (reconciles wait their I/O and write nothing); %d leaves, %d kills, %d joins\n",
		cfg.Workers, handoverTimes, handoverTimes, 2*handoverTimes)
	s, err := openSession(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.close(ctx)) }()
	all := []string{"replica-1", "replica-2", "replica-3", "replica-4"}
	for _, id := range all {
		if err := s.fleet.start(id); err != nil {
			return err
		}
	}
	if _, err := s.waitBalanced(ctx, "the buckets to spread", all); err != nil {
		return err
	}
	if err := s.waitConverged(ctx, "the first convergence"); err != nil {
		return err
	}
	const mover = "replica-4"
	rest := all[:3]
	var joins, joinTakes, leaves, leaveTakes, crashes, crashTakes, takeovers []time.Duration
	for i := range 2 * handoverTimes {
		before, err := s.world.owners(ctx)
		if err != nil {
			return err
		}
		recs, err := s.records()
		if err != nil {
			return err
		}
		mark, start := len(recs), time.Now()
		if i%2 == 0 {
			err = s.fleet.leave(mover, s.cfg.Timeout)
		} else {
			err = s.fleet.kill(mover)
		}
		if err != nil {
			return err
		}
		if _, err := s.waitBalanced(ctx, "the takeover", rest); err != nil {
			return err
		}
		took := time.Since(start)
		first, err := s.waitFirstReconciles(ctx, mark, bucketsOf(before, mover), mover, start)
		if err != nil {
			return err
		}
		if recs, err = s.records(); err != nil {
			return err
		}
		takes := s.firsts(recs, mark, bucketsOf(before, mover), mover, start, kindGained)
		if i%2 == 0 {
			leaves = append(leaves, first...)
			leaveTakes = append(leaveTakes, takes...)
		} else {
			crashes = append(crashes, first...)
			crashTakes = append(crashTakes, takes...)
			takeovers = append(takeovers, took)
		}
		// The mover comes back: the others hand buckets over to it.
		mark = len(recs)
		if err := s.fleet.start(mover); err != nil {
			return err
		}
		if _, err := s.waitBalanced(ctx, mover+" to rejoin", all); err != nil {
			return err
		}
		var planned, taken []time.Duration
		err = demo.WaitFor(ctx, "the joiner's first reconciles", s.cfg.Timeout, func() (bool, error) {
			recs, err := s.records()
			var pending int
			planned, taken, pending = plannedHandovers(recs[mark:], s.cfg.Buckets, s.withKeys())
			return pending == 0, err
		})
		if err != nil {
			return err
		}
		joins = append(joins, planned...)
		joinTakes = append(joinTakes, taken...)
	}
	for _, ds := range [][]time.Duration{joins, joinTakes, leaves, leaveTakes, crashes, crashTakes, takeovers} {
		slices.Sort(ds)
	}
	out := cfg.Out
	fmt.Fprintf(out, "planned handover (a replica joins), from the old owner's decision (release record) to\n")
	fmt.Fprintf(out, "  the new owner's ownership: %s\n", distribution(joinTakes))
	fmt.Fprintf(out, "  the new owner's first reconcile of the bucket: %s\n", distribution(joins))
	fmt.Fprintf(out, "graceful leave, from SIGTERM to\n")
	fmt.Fprintf(out, "  the new owners' ownership: %s\n", distribution(leaveTakes))
	fmt.Fprintf(out, "  the new owners' first reconcile of each bucket: %s\n", distribution(leaves))
	fmt.Fprintf(out, "crash, from SIGKILL to\n")
	fmt.Fprintf(out, "  the new owners' ownership: %s\n", distribution(crashTakes))
	fmt.Fprintf(out, "  the new owners' first reconcile of each bucket: %s\n", distribution(crashes))
	fmt.Fprintf(out, "  every bucket of the killed replica owned again, per kill: %s\n", distribution(takeovers))
	v, err := s.verdict(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "exclusivity over the handover runs: %v\n", v)
	if !v.ok() {
		return fmt.Errorf("exclusivity broken: %v %v %v", v.Overlaps, v.Unfenced, v.Unended)
	}
	return nil
}

// plannedHandovers returns, for each bucket in withKeys an owner started
// to hand over in recs (a release record), the time to the target's first
// reconcile of one of the bucket's keys (out) and to its gain (taken),
// and how many buckets still wait for a first reconcile.
func plannedHandovers(recs []record, buckets int, withKeys map[int]bool) (out, taken []time.Duration, pending int) {
	type handing struct {
		target string
		at     time.Time
	}
	waiting := map[int]handing{}
	reconciled, gained := map[int]bool{}, map[int]bool{}
	for _, r := range recs {
		switch r.Kind {
		case kindRelease:
			if withKeys[int(r.N1)] {
				waiting[int(r.N1)] = handing{target: r.Note, at: r.At}
			}
		case kindGained:
			b := int(r.N1)
			if p, ok := waiting[b]; ok && p.target == r.Who && !gained[b] {
				taken = append(taken, r.At.Sub(p.at))
				gained[b] = true
			}
		case kindBegin:
			b := shard.Bucket(r.Key, buckets)
			if p, ok := waiting[b]; ok && p.target == r.Who && !reconciled[b] {
				out = append(out, r.At.Sub(p.at))
				reconciled[b] = true
			}
		}
	}
	pending = len(waiting) - len(reconciled)
	return out, taken, pending
}
