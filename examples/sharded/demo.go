package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/converge-go/converge/examples/internal/demo"
	"github.com/converge-go/converge/examples/internal/etcdflag"
)

// Config configures a run.
type Config struct {
	// Etcd says where etcd is (the zero value: an embedded member).
	Etcd etcdflag.Flags
	// Executable is this program, which the replicas run (replicaEnv).
	Executable string
	// Out receives the narration.
	Out io.Writer
	// Keys, Buckets and Workers (per replica) size the run; TTL is the
	// membership TTL, IO the pretend I/O of each reconcile.
	Keys, Buckets, Workers int
	TTL, IO                time.Duration
	// Churn makes every reconcile write and requeue its key (steady load
	// for measurements and exclusivity runs); with NoWrites as well, a
	// churning reconcile only waits its I/O and requeues (a world that
	// needs no status change: I/O-bound work, no etcd write).
	Churn, NoWrites bool
	// Timeout bounds each wait (default 30s).
	Timeout time.Duration
}

// Defaults of Config and of the flags.
const (
	defaultKeys    = 2000
	defaultBuckets = 256
	defaultWorkers = 4
	defaultTTL     = 2 * time.Second
	defaultIO      = 5 * time.Millisecond
)

func (c Config) withDefaults() Config {
	if c.Keys == 0 {
		c.Keys = defaultKeys
	}
	if c.Buckets == 0 {
		c.Buckets = defaultBuckets
	}
	if c.Workers == 0 {
		c.Workers = defaultWorkers
	}
	if c.TTL == 0 {
		c.TTL = defaultTTL
	}
	if c.IO == 0 {
		c.IO = defaultIO
	}
	if c.Timeout == 0 {
		c.Timeout = 30 * time.Second
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	return c
}

// Report is what the demo saw, for its summary and its tests.
type Report struct {
	// Throughput is the reconciles per second of each round over every
	// key: with 1, 2 and 3 replicas, then 2 after the crash.
	Throughput []Rate
	// Moved is how many buckets changed owner when replica 2 and replica
	// 3 joined.
	Moved []int
	// Takeover is the time from replica-2's SIGKILL to the moment every
	// one of its buckets had a new owner; Crashed how many it owned.
	Takeover time.Duration
	Crashed  int
	// Frozen is how long replica-3 was stopped; Late the outcome of the
	// write it prepared before and sent after (outGuard: refused with
	// store.ErrGuardFailed).
	Frozen time.Duration
	Late   string
	// Verdict is the exclusivity check of every record of the run.
	Verdict verdict
}

// Rate is the throughput of a round.
type Rate struct {
	Replicas  int
	PerSecond float64
}

// Run plays the narrated demo.
func Run(ctx context.Context, cfg Config) (rep Report, err error) {
	cfg = cfg.withDefaults()
	say := demo.NewNarrator(cfg.Out)
	s, err := openSession(ctx, cfg)
	if err != nil {
		return rep, err
	}
	defer func() { err = errors.Join(err, s.close(ctx)) }()
	where := "embedded member"
	if !s.etcd.Embedded() {
		where = "existing cluster"
	}
	say.Say("sharded demo: etcd at %s (%s), %d keys in %d buckets under %s; replicas are processes of this program; each reconcile waits %v on pretend I/O, %d at once per replica; membership TTL %v",
		strings.Join(s.etcd.Endpoints(), ","), where, cfg.Keys, cfg.Buckets, s.prefix, cfg.IO, cfg.Workers, cfg.TTL)
	if load, err := os.ReadFile("/proc/loadavg"); err == nil {
		fields := strings.Fields(string(load))
		say.Say("this machine: %d CPUs, load average %s (the rounds below are bound by CPU when the machine is busy: see README.md)",
			runtime.NumCPU(), strings.Join(fields[:min(3, len(fields))], " "))
	}
	d := &demoRun{s: s, say: say, rep: &rep}
	err = demo.Play(ctx, d.first, d.join("replica-2"), d.join("replica-3"), d.crash, d.freeze)
	say.Say("== shutdown: every replica leaves; the records of every reconcile and write are checked against etcd's history of the owner records")
	v, verr := s.verdict(ctx)
	rep.Verdict = v
	err = errors.Join(err, verr)
	if verr == nil {
		say.Say("exclusivity: %v", v)
		if !v.ok() {
			err = errors.Join(err, fmt.Errorf("exclusivity broken: overlaps %v, writes from non-owners %v, unended %v", v.Overlaps, v.Unfenced, v.Unended))
		}
	}
	summarize(cfg.Out, rep, err)
	return rep, err
}

func summarize(w io.Writer, rep Report, err error) {
	sum := demo.NewSummary(w)
	var tp []string
	for _, t := range rep.Throughput {
		tp = append(tp, fmt.Sprintf("%s %.0f/s", demo.Count(t.Replicas, "replica"), t.PerSecond))
	}
	sum.Line("throughput", "%s (reconciles per second over every key)", strings.Join(tp, ", "))
	sum.Line("moves", "%v buckets moved when replicas joined", rep.Moved)
	sum.Line("crash", "%d buckets taken over %v after SIGKILL", rep.Crashed, rep.Takeover.Round(time.Millisecond))
	sum.Line("late write", "%s (sent after a pause of %v)", rep.Late, rep.Frozen.Round(time.Millisecond))
	sum.Line("exclusivity", "%v", rep.Verdict)
	sum.Result(err)
}

// demoRun holds the demo's state between steps.
type demoRun struct {
	s   *session
	say *demo.Narrator
	rep *Report
	ids []string // live replicas
}

func (d *demoRun) spread(owners map[int]string) string {
	n := spread(owners)
	ids := make([]string, 0, len(n))
	for id := range n {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("%s %d", id, n[id])
	}
	return strings.Join(parts, ", ")
}

// measure runs a round over every key and narrates its throughput.
func (d *demoRun) measure(ctx context.Context) error {
	rate, err := d.s.round(ctx, "every key to converge")
	if err != nil {
		return err
	}
	d.rep.Throughput = append(d.rep.Throughput, Rate{Replicas: len(d.ids), PerSecond: rate})
	d.say.Say("every key's generation raised: %d keys converged by %s at %.0f reconciles/s", len(d.s.world.keys), demo.Count(len(d.ids), "replica"), rate)
	return nil
}

func (d *demoRun) first(ctx context.Context) error {
	d.say.Say("== one replica")
	if err := d.s.fleet.start("replica-1"); err != nil {
		return err
	}
	d.ids = []string{"replica-1"}
	owners, err := d.s.waitBalanced(ctx, "replica-1 to own every bucket", d.ids)
	if err != nil {
		return err
	}
	d.say.Say("replica-1 (pid %d) owns the buckets: %s", d.s.fleet.pid("replica-1"), d.spread(owners))
	if err := d.s.waitConverged(ctx, "the first convergence"); err != nil {
		return err
	}
	return d.measure(ctx)
}

func (d *demoRun) join(id string) demo.Step {
	return func(ctx context.Context) error {
		d.say.Say("== %s joins", id)
		before, err := d.s.world.owners(ctx)
		if err != nil {
			return err
		}
		start := time.Now()
		if err := d.s.fleet.start(id); err != nil {
			return err
		}
		d.ids = append(d.ids, id)
		owners, err := d.s.waitBalanced(ctx, id+"'s share of the buckets", d.ids)
		if err != nil {
			return err
		}
		moved := 0
		for b, o := range owners {
			if before[b] != o {
				moved++
			}
		}
		d.rep.Moved = append(d.rep.Moved, moved)
		d.say.Say("%s (pid %d) started; %v later the buckets are spread: %s (%d of %d moved, handed over by their owners)",
			id, d.s.fleet.pid(id), time.Since(start).Round(time.Millisecond), d.spread(owners), moved, d.s.cfg.Buckets)
		return d.measure(ctx)
	}
}

func (d *demoRun) crash(ctx context.Context) error {
	const victim = "replica-2"
	d.say.Say("== %s is killed (SIGKILL): it cannot hand anything over", victim)
	before, err := d.s.world.owners(ctx)
	if err != nil {
		return err
	}
	recs, err := d.s.records()
	if err != nil {
		return err
	}
	mark, start := len(recs), time.Now()
	if err := d.s.fleet.kill(victim); err != nil {
		return err
	}
	d.ids = []string{"replica-1", "replica-3"}
	owners, err := d.s.waitBalanced(ctx, "the takeover of "+victim+"'s buckets", d.ids)
	if err != nil {
		return err
	}
	d.rep.Takeover = time.Since(start)
	lost := bucketsOf(before, victim)
	d.rep.Crashed = len(lost)
	first, err := d.s.waitFirstReconciles(ctx, mark, lost, victim, start)
	if err != nil {
		return err
	}
	d.say.Say("%s's %d buckets have new owners %v after the kill (TTL %v since its last renewal, up to TTL/3 before the kill): %s",
		victim, len(lost), d.rep.Takeover.Round(time.Millisecond), d.s.cfg.TTL, d.spread(owners))
	d.say.Say("first reconcile in each of its buckets by the new owners, after the kill: %s", distribution(first))
	return d.measure(ctx)
}

func (d *demoRun) freeze(ctx context.Context) error {
	const victim = "replica-3"
	d.say.Say("== %s prepares a write under its claim, then is paused (SIGSTOP) beyond the TTL", victim)
	recs, err := d.s.records()
	if err != nil {
		return err
	}
	if err := d.s.fleet.signal(victim, syscall.SIGUSR1); err != nil {
		return err
	}
	i, recs, err := d.s.waitRecord(ctx, victim+" to prepare its write", len(recs), kindArmed, victim, "")
	if err != nil {
		return err
	}
	armed := recs[i]
	if armed.Key == "" {
		return fmt.Errorf("%s prepared no write: %s", victim, armed.Note)
	}
	d.say.Say("%s claimed %s (bucket epoch %d, object revision %d)", victim, armed.Key, armed.N1, armed.N2)
	start := time.Now()
	if err := d.s.fleet.freeze(victim); err != nil {
		return err
	}
	d.ids = []string{"replica-1"}
	if _, err := d.s.waitBalanced(ctx, "the takeover of "+victim+"'s buckets", d.ids); err != nil {
		return err
	}
	d.say.Say("%v later, replica-1 owns every bucket: %s was declared dead", time.Since(start).Round(time.Millisecond), victim)
	if err := d.s.fleet.thaw(victim); err != nil {
		return err
	}
	d.rep.Frozen = time.Since(start)
	if err := d.s.fleet.signal(victim, syscall.SIGUSR2); err != nil {
		return err
	}
	i, recs, err = d.s.waitRecord(ctx, victim+"'s late write", i, kindLate, victim, armed.Key)
	if err != nil {
		return err
	}
	d.rep.Late = recs[i].Note
	if d.rep.Late != outGuard {
		return fmt.Errorf("%s's late write of %s: %s, want it refused by the guard", victim, armed.Key, d.rep.Late)
	}
	d.say.Say("%s resumed after %v and sent its write of %s: refused, store.ErrGuardFailed (epoch %d is gone)", victim, d.rep.Frozen.Round(time.Millisecond), armed.Key, armed.N1)
	d.ids = []string{"replica-1", "replica-3"}
	owners, err := d.s.waitBalanced(ctx, victim+" to rejoin", d.ids)
	if err != nil {
		return err
	}
	d.say.Say("%s rejoined under a new membership term: %s", victim, d.spread(owners))
	return nil
}
