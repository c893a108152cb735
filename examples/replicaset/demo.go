package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/converge-go/converge/reconcile/convergeprom"
	"github.com/converge-go/converge/reconcile/debugpage"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/converge-go/converge/examples/internal/demo"
	"github.com/converge-go/converge/examples/internal/pods"
	"github.com/converge-go/converge/examples/replicaset/controller"
	"github.com/converge-go/converge/reconcile/manager"
	"github.com/converge-go/converge/store/boltstore"
	"github.com/converge-go/converge/store/faultstore"
)

// demoKey is the replica set the demo runs.
const demoKey = "web"

// Config configures the demo.
type Config struct {
	// Replicas is the pod count the demo starts with (at least 1).
	Replicas int
	// StoreDir holds the bbolt file. Empty: a temporary directory, removed
	// when the demo ends.
	StoreDir string
	// Executable is the binary pods run in pod mode (pods.PodEnv).
	Executable string
	// Out receives the narration.
	Out io.Writer
	// Logger receives the controller's logs (nil: discarded).
	Logger *slog.Logger
	// Outage is how long the store stays unreachable (default 2s).
	Outage time.Duration
	// Timeout bounds each wait for convergence (default 15s).
	Timeout time.Duration
	// HTTPAddr, if set, serves the debug page (/debug/converge/), the
	// Prometheus metrics (/metrics) and the probes on this address while
	// the demo runs.
	HTTPAddr string
	// OnServing, if set with HTTPAddr, is called with the server's base URL
	// once it serves, before the scenario starts.
	OnServing func(base string)
}

// Report is what happened, for the summary and for tests.
type Report struct {
	// Resumed is set when the store already held the replica set.
	Resumed *PhaseResult
	// Phases are the steps of the scenario, in order.
	Phases []PhaseResult
	// Killed counts the pods the demo killed (power failure and outage).
	Killed int
	// Outage describes the store outage.
	Outage OutageResult
	// BeforeShutdown counts the pods up to the shutdown; Stats includes it.
	BeforeShutdown, Stats pods.Stats
	// StartedPIDs lists every pod ever started.
	StartedPIDs []int
	// Leftover lists the started pods whose process still exists after
	// shutdown: empty unless the shutdown guarantee broke.
	Leftover []int
	// Final is the replica set as stored at the end.
	Final controller.ReplicaSet
	// StorePath is the bbolt file; StoreKept says whether it outlives the demo.
	StorePath string
	StoreKept bool
}

// PhaseResult is the state at the end of one step, once converged.
type PhaseResult struct {
	Name string
	// Want is the replica count of the spec.
	Want int
	// Pods are the pids running at the end of the step.
	Pods []int
	// Ready, Generation and ObservedGeneration are read from the store.
	Ready                          int
	Generation, ObservedGeneration int64
	Took                           time.Duration
}

// OutageResult describes the store outage.
type OutageResult struct {
	// Down is how long the store was unreachable.
	Down time.Duration
	// Victim is the pod killed while the store was down.
	Victim int
	// ReplacedWhileDown lists the pods started while the store was down.
	ReplacedWhileDown []int
	// StaleStatus is the pod list the store held once the victim had been
	// replaced, while the store was still down.
	StaleStatus []int
	// StatusCaughtUp is how long after the store returned the stored status
	// matched the running pods again.
	StatusCaughtUp time.Duration
}

// Run runs the demo: it opens the store, starts the supervisor and the
// controller, plays the scenario, shuts everything down, checks that no pod
// is left and writes a summary. It returns an error if a step did not
// converge in time or a guarantee broke; the report holds what happened
// up to then.
func Run(ctx context.Context, cfg Config) (rep Report, err error) {
	if cfg.Replicas < 1 {
		return rep, fmt.Errorf("replicas: %d, want at least 1", cfg.Replicas)
	}
	if cfg.Outage <= 0 {
		cfg.Outage = 2 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 15 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}

	dir := cfg.StoreDir
	rep.StoreKept = dir != ""
	if dir == "" {
		if dir, err = os.MkdirTemp("", "converge-replicaset-"); err != nil {
			return rep, err
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return rep, err
	}
	rep.StorePath = filepath.Join(dir, "replicasets.db")
	db, err := boltstore.Open[*controller.ReplicaSet](rep.StorePath)
	if err != nil {
		return rep, err
	}
	defer func() { err = errors.Join(err, db.Close()) }()

	say := demo.NewNarrator(cfg.Out)
	sup := pods.NewSupervisor(pods.SupervisorConfig{Executable: cfg.Executable, StopGrace: time.Second, OnEvent: say.PodEvent})
	defer sup.Close()
	// The controller and the operator reach bbolt through a fault store,
	// which injects nothing until the scenario's outage makes it
	// unreachable; the narrator reads bbolt directly.
	net, err := faultstore.New[*controller.ReplicaSet](db, faultstore.Options{})
	if err != nil {
		return rep, err
	}
	ccfg := controller.Config{Pods: sup, Exits: sup.Exits(), Logger: cfg.Logger}
	mopts := manager.Options{Logger: cfg.Logger, ShutdownTimeout: 10 * time.Second}
	var reg *prometheus.Registry
	var instrumented *convergeprom.Controller
	if cfg.HTTPAddr != "" {
		reg = prometheus.NewRegistry()
		metrics, err := convergeprom.New(reg)
		if err != nil {
			return rep, err
		}
		instrumented = metrics.Controller("replicaset", convergeprom.ControllerOptions{Workers: 1, Timeout: 10 * time.Second})
		ccfg.Metrics, ccfg.QueueMetrics = instrumented, instrumented
		mopts.Server = &manager.ServerOptions{Addr: cfg.HTTPAddr}
	}
	ctrl, err := controller.New(net, ccfg)
	if err != nil {
		return rep, err
	}
	mgr, err := manager.New(mopts)
	if err != nil {
		return rep, err
	}
	if reg != nil {
		instrumented.Watch(ctrl)
		if err := errors.Join(
			mgr.Handle("/debug/converge/", debugpage.New(debugpage.Options{IsLeader: mgr.IsLeader}, ctrl)),
			mgr.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{})),
		); err != nil {
			return rep, err
		}
	}
	if err := errors.Join(mgr.Add(ctrl), mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		return watchStore(ctx, say, db)
	}))); err != nil {
		return rep, err
	}

	say.Say("replicaset demo: pods are child processes of this program; store %s", rep.StorePath)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	mgrDone := make(chan error, 1)
	go func() {
		mgrDone <- mgr.Run(runCtx)
		stop() // a failed runnable ends the scenario too
	}()

	if reg != nil {
		base, err := serving(runCtx, mgr)
		if err != nil {
			stop()
			return rep, errors.Join(err, <-mgrDone)
		}
		say.Say("debug page: %s/debug/converge/ · metrics: %s/metrics", base, base)
		if cfg.OnServing != nil {
			cfg.OnServing(base)
		}
	}
	d := &scenario{cfg: cfg, say: say, db: db, net: net, sup: sup, ctrl: ctrl, rep: &rep}
	err = d.play(runCtx)

	say.Say("== shutdown: stopping the controller, then every pod")
	rep.BeforeShutdown = sup.Stats()
	stop()
	err = errors.Join(err, <-mgrDone)
	var stopErr error
	rep.Leftover, stopErr = demo.StopPods(sup, say)
	err = errors.Join(err, stopErr)
	rep.Stats, rep.StartedPIDs = sup.Stats(), sup.Started()
	if obj, gerr := db.Get(context.WithoutCancel(ctx), demoKey); gerr == nil {
		rep.Final = *obj.Value
	}
	summarize(cfg.Out, &rep, err)
	return rep, err
}

// serving waits until the manager's HTTP server listens and returns its
// base URL.
func serving(ctx context.Context, mgr *manager.Manager) (string, error) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for mgr.Addr() == nil {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return "", fmt.Errorf("http server did not start: %w", ctx.Err())
		}
	}
	return "http://" + mgr.Addr().String(), nil
}
