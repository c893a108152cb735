package main

import (
	"context"
	"errors"
	"fmt"
	"io"
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
	var t handoverTimings
	for i := range 2 * handoverTimes {
		mark, err := t.depart(ctx, s, mover, all[:3], i%2 == 1)
		if err != nil {
			return err
		}
		// The mover comes back: the others hand buckets over to it.
		if err := t.rejoin(ctx, s, mover, all, mark); err != nil {
			return err
		}
	}
	t.report(cfg.Out)
	out := cfg.Out
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

// handoverTimings gathers what handovers measures, per kind of handover:
// the time to the new owner's ownership (…Takes) and to its first
// reconcile of each bucket moved.
type handoverTimings struct {
	joins, joinTakes, leaves, leaveTakes, crashes, crashTakes, takeovers []time.Duration
}

// depart makes the mover leave (SIGTERM) or, if kill, crash (SIGKILL), and
// records how long until the rest own its buckets and first reconcile
// each. It returns the length of the reconcile records at the end.
func (t *handoverTimings) depart(ctx context.Context, s *session, mover string, rest []string, kill bool) (int, error) {
	before, err := s.world.owners(ctx)
	if err != nil {
		return 0, err
	}
	recs, err := s.records()
	if err != nil {
		return 0, err
	}
	mark, start := len(recs), time.Now()
	if kill {
		err = s.fleet.kill(mover)
	} else {
		err = s.fleet.leave(mover, s.cfg.Timeout)
	}
	if err != nil {
		return 0, err
	}
	if _, err := s.waitBalanced(ctx, "the takeover", rest); err != nil {
		return 0, err
	}
	took := time.Since(start)
	first, err := s.waitFirstReconciles(ctx, mark, bucketsOf(before, mover), mover, start)
	if err != nil {
		return 0, err
	}
	if recs, err = s.records(); err != nil {
		return 0, err
	}
	takes := s.firsts(recs, mark, bucketsOf(before, mover), mover, start, kindGained)
	if kill {
		t.crashes = append(t.crashes, first...)
		t.crashTakes = append(t.crashTakes, takes...)
		t.takeovers = append(t.takeovers, took)
	} else {
		t.leaves = append(t.leaves, first...)
		t.leaveTakes = append(t.leaveTakes, takes...)
	}
	return len(recs), nil
}

// rejoin starts the mover again and records the planned handovers to it:
// from each old owner's decision to the mover's ownership and first
// reconcile, in the records after mark.
func (t *handoverTimings) rejoin(ctx context.Context, s *session, mover string, all []string, mark int) error {
	if err := s.fleet.start(mover); err != nil {
		return err
	}
	if _, err := s.waitBalanced(ctx, mover+" to rejoin", all); err != nil {
		return err
	}
	var planned, taken []time.Duration
	err := demo.WaitFor(ctx, "the joiner's first reconciles", s.cfg.Timeout, func() (bool, error) {
		recs, err := s.records()
		var pending int
		planned, taken, pending = plannedHandovers(recs[mark:], s.cfg.Buckets, s.withKeys())
		return pending == 0, err
	})
	if err != nil {
		return err
	}
	t.joins = append(t.joins, planned...)
	t.joinTakes = append(t.joinTakes, taken...)
	return nil
}

// report prints the distributions of the timings.
func (t *handoverTimings) report(out io.Writer) {
	for _, ds := range [][]time.Duration{t.joins, t.joinTakes, t.leaves, t.leaveTakes, t.crashes, t.crashTakes, t.takeovers} {
		slices.Sort(ds)
	}
	fmt.Fprintf(out, "planned handover (a replica joins), from the old owner's decision (release record) to\n")
	fmt.Fprintf(out, "  the new owner's ownership: %s\n", distribution(t.joinTakes))
	fmt.Fprintf(out, "  the new owner's first reconcile of the bucket: %s\n", distribution(t.joins))
	fmt.Fprintf(out, "graceful leave, from SIGTERM to\n")
	fmt.Fprintf(out, "  the new owners' ownership: %s\n", distribution(t.leaveTakes))
	fmt.Fprintf(out, "  the new owners' first reconcile of each bucket: %s\n", distribution(t.leaves))
	fmt.Fprintf(out, "crash, from SIGKILL to\n")
	fmt.Fprintf(out, "  the new owners' ownership: %s\n", distribution(t.crashTakes))
	fmt.Fprintf(out, "  the new owners' first reconcile of each bucket: %s\n", distribution(t.crashes))
	fmt.Fprintf(out, "  every bucket of the killed replica owned again, per kill: %s\n", distribution(t.takeovers))
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
