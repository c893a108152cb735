package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/converge-go/converge/examples/internal/demo"
	"github.com/converge-go/converge/examples/internal/etcdflag"
	"github.com/converge-go/converge/examples/internal/pods"
	"github.com/converge-go/converge/examples/replicaset/controller"
	"github.com/converge-go/converge/lock"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/etcdstore"
)

// DefaultTTL is the lease TTL when Config.TTL is zero.
const DefaultTTL = 2 * time.Second

// Names of the demo.
const (
	replicaCount = 3
	// etcdPrefix holds the lease record and the replica sets: one prefix,
	// so that the lease's guard fences the replica set writes.
	etcdPrefix = "converge-failover/"
	leaseKey   = "leases/replicaset-controller"
	rsPrefix   = "replicasets/"
	demoKey    = rsPrefix + "web"
)

// Config configures the demo.
type Config struct {
	// Etcd says where etcd is: an existing cluster, or (the zero value) an
	// embedded member the demo starts.
	Etcd etcdflag.Flags
	// TTL is the lease TTL (0: DefaultTTL). The leader renews every TTL/3
	// and gives up after 2*TTL/3 without a successful renewal.
	TTL time.Duration
	// Pods is the pod count the demo starts with (0: 3); after the
	// takeover it scales to Pods+2.
	Pods int
	// Executable is the binary pods run in pod mode (pods.PodEnv).
	Executable string
	// Out receives the narration and the summary.
	Out io.Writer
	// Logger receives the replicas' logs (nil: discarded).
	Logger *slog.Logger
	// Timeout bounds each wait for convergence (0: 15s); the wait for the
	// takeover gets the TTL on top.
	Timeout time.Duration
}

// Report is what happened, for the summary and for tests.
type Report struct {
	// Start is when the demo started.
	Start time.Time
	// TTL is the lease TTL used.
	TTL time.Duration
	// Terms lists every term of leadership, in start order.
	Terms []Term
	// Phases are the converged states: before the crash, right after the
	// takeover, after the scale-up (which follows the late write).
	Phases []PhaseResult
	// Crash describes the crash and the takeover.
	Crash CrashResult
	// LateWrite describes the crashed leader's late write.
	LateWrite LateWriteResult
	// Stats counts the pods; StartedPIDs lists them all.
	Stats       pods.Stats
	StartedPIDs []int
	// Leftover lists the started pods whose process or process group still
	// exists after shutdown: empty unless the shutdown guarantee broke.
	Leftover []int
	// GoroutinesBefore and GoroutinesAfter count the goroutines before the
	// demo and once it has shut down.
	GoroutinesBefore, GoroutinesAfter int
}

// PhaseResult is the state at the end of one step, once converged.
type PhaseResult struct {
	Name string
	// Leader is the replica that led when the step converged.
	Leader string
	// Want is the replica count of the spec; Pods the pids running.
	Want int
	Pods []int
	// Generation and ObservedGeneration are read from etcd.
	Generation, ObservedGeneration int64
	// Started counts the pods started during the step.
	Started int
	Took    time.Duration
}

// CrashResult describes the leader's crash and the takeover.
type CrashResult struct {
	// Old is the crashed leader's term; New the term that took over.
	Old, New Term
	// At is when the crash began.
	At time.Time
	// RecordKept reports that the lease record of the crashed term was
	// still in etcd once the crashed replica had stopped: it was not
	// released, so the takeover had to wait out the TTL.
	RecordKept bool
	// Handover is the time from the crash to the new term.
	Handover time.Duration
}

// LateWriteResult describes the status write the leader sent under its
// term just before it crashed, delivered after the takeover.
type LateWriteResult struct {
	// Term is the crashed leader's term, whose guard the write carried.
	Term Term
	// SameRevision reports that the replica set had not changed between
	// the sending and the delivery: the write's compare-and-swap would
	// have passed, so only the guard rejected it.
	SameRevision bool
	// Err is the write's error: it matches store.ErrGuardFailed.
	Err error
	// Unchanged reports that the replica set was left as it was.
	Unchanged bool
}

// Run runs the demo: it starts an embedded etcd, the shared pod supervisor
// and three replicas, plays the scenario, shuts everything down, checks that
// no pod and no goroutine is left, and writes a summary. It returns an error
// if a step did not happen in time or a guarantee broke; the report holds
// what happened up to then.
func Run(ctx context.Context, cfg Config) (rep Report, err error) {
	if cfg.TTL == 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.TTL < 0 || cfg.Pods < 0 || cfg.Timeout < 0 {
		return rep, fmt.Errorf("negative TTL (%v), pods (%d) or timeout (%v)", cfg.TTL, cfg.Pods, cfg.Timeout)
	}
	if cfg.Pods == 0 {
		cfg.Pods = 3
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 15 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	rep.TTL = cfg.TTL
	rep.GoroutinesBefore = runtime.NumGoroutine()
	say := newNarrator(cfg.Out)
	rep.Start = say.Start()

	err = runDemo(ctx, cfg, say, &rep)

	rep.GoroutinesAfter = settleGoroutines(ctx, rep.GoroutinesBefore, 5*time.Second)
	if rep.GoroutinesAfter > rep.GoroutinesBefore {
		err = errors.Join(err, fmt.Errorf("goroutines left: %d after the demo, %d before", rep.GoroutinesAfter, rep.GoroutinesBefore))
	} else {
		say.Say("goroutines back to %d, as before the demo", rep.GoroutinesAfter)
	}
	summarize(cfg.Out, &rep, err)
	return rep, err
}

// runDemo does the demo's work between the goroutine counts: everything it
// starts is stopped when it returns, etcd last.
func runDemo(ctx context.Context, cfg Config, say *narrator, rep *Report) (err error) {
	dir, err := os.MkdirTemp("", "converge-failover-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	etcd, err := etcdflag.Open(cfg.Etcd, dir)
	if err != nil {
		return err
	}
	defer etcd.Close() // after every client: defers run last in, first out
	endpoint := strings.Join(etcd.Endpoints(), ",")

	operator, err := etcd.Client()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, operator.Close()) }()
	if !etcd.Embedded() {
		// An existing cluster may hold an earlier run's lease and replica
		// set: start afresh, and leave nothing behind.
		if err := clearPrefix(ctx, operator); err != nil {
			return err
		}
		defer func() { err = errors.Join(err, clearPrefix(context.WithoutCancel(ctx), operator)) }()
	}
	rawObjects, err := etcdstore.New[*controller.ReplicaSet](operator, etcdPrefix)
	if err != nil {
		return err
	}
	objects, err := apistore.New[*controller.ReplicaSet](rawObjects, resource.Kind[controller.Spec, controller.Status]{},
		apistore.WithAdmission(rsPrefix, controller.Admission()))
	if err != nil {
		return err
	}
	leases, err := etcdstore.New[lock.Record](operator, etcdPrefix)
	if err != nil {
		return err
	}

	sup := pods.NewSupervisor(pods.SupervisorConfig{Executable: cfg.Executable, StopGrace: time.Second, OnEvent: say.PodEvent})
	defer sup.Close()
	ts := &terms{onStart: say.termStarted, onEnd: say.termEnded}
	deps := replicaDeps{etcd: etcd, ttl: cfg.TTL, pods: sup, terms: ts, wrote: say.statusWritten, logger: cfg.Logger}

	where := "an existing cluster"
	if etcd.Embedded() {
		where = "embedded, data in " + dir
	}
	say.Say("failover demo: etcd at %s (%s), lease TTL %v", endpoint, where, cfg.TTL)
	say.Say("%d replicas of the manager, each with its own etcd client, campaign on %s%s; pods are child processes of this program, shared by the replicas", replicaCount, etcdPrefix, leaseKey)
	replicas := make(map[string]*replica, replicaCount)
	defer func() {
		for _, r := range replicas {
			err = errors.Join(err, r.stop())
		}
	}()
	if err := startReplicas(ctx, replicas, deps); err != nil {
		return err
	}

	s := &scenario{cfg: cfg, say: say, objects: objects, leases: leases, etcd: etcd, sup: sup, terms: ts, replicas: replicas, rep: rep}
	err = s.play(ctx)

	say.Say("== shutdown: the followers stop, then the leader (releasing the lease), then every pod")
	err = errors.Join(err, s.stopReplicas())
	rep.Terms = ts.all()
	if a, b, found := overlap(rep.Terms); found {
		err = errors.Join(err, fmt.Errorf("two leaders at once: %s (token %d) and %s (token %d)", a.Replica, a.Token, b.Replica, b.Token))
	}
	var stopErr error
	rep.Leftover, stopErr = demo.StopPods(sup, say.Narrator)
	err = errors.Join(err, stopErr)
	rep.Stats, rep.StartedPIDs = sup.Stats(), sup.Started()
	return err
}

// startReplicas builds the demo's replicas into replicas (those built
// before a failure included, for the caller to stop), then starts them.
func startReplicas(ctx context.Context, replicas map[string]*replica, deps replicaDeps) error {
	for i := range replicaCount {
		name := fmt.Sprintf("replica-%d", i+1)
		r, err := newReplica(name, deps)
		if err != nil {
			return err
		}
		replicas[name] = r
	}
	for _, r := range replicas {
		r.start(ctx)
	}
	return nil
}

// clearPrefix deletes the demo's keys.
func clearPrefix(ctx context.Context, cli *clientv3.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := cli.Delete(ctx, etcdPrefix, clientv3.WithPrefix())
	return err
}

// settleGoroutines waits up to limit for the goroutine count to fall to
// want (goroutines of closed connections take a moment to return) and
// returns the last count.
func settleGoroutines(ctx context.Context, want int, limit time.Duration) int {
	n := runtime.NumGoroutine()
	_ = demo.WaitFor(ctx, "the goroutines to return", limit, func() (bool, error) {
		n = runtime.NumGoroutine()
		return n <= want, nil
	})
	return n
}
