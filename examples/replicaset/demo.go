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

	"github.com/converge-go/converge/examples/internal/demo"
	"github.com/converge-go/converge/examples/internal/pods"
	"github.com/converge-go/converge/examples/replicaset/controller"
	"github.com/converge-go/converge/internal/privatefile"
)

// demoKey is the replica set the demo runs.
const demoKey = "web"

// Config configures the demo.
type Config struct {
	// Replicas is the pod count the demo starts with (at least 1).
	Replicas int
	// StoreDir holds the bbolt file, its change log and the controllers'
	// checkpoint. Empty: a temporary directory, removed when the demo
	// ends. One another user may change (of another user than this
	// process's and root, or writable by group or others) is refused
	// (internal/privatefile), unless InsecurePermissions; a missing one is
	// made with mode 0700.
	StoreDir string
	// InsecurePermissions uses such a StoreDir, with a warning in the log.
	InsecurePermissions bool
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
	// StartAfter is how long a controller started while the store is
	// unreachable tries to list it before it starts from its checkpoint
	// (checkpoint.Options.StartAfter; default 2s).
	StartAfter time.Duration
	// HeartbeatInterval bounds how long an unreachable store goes
	// unnoticed (controller.Config.HeartbeatInterval; zero: its default).
	HeartbeatInterval time.Duration
	// CheckpointInterval is how often the controller writes what changed
	// to its checkpoint (checkpoint.Options.Interval; zero: the package's
	// default, checkpoint.DefaultInterval).
	CheckpointInterval time.Duration
	// HTTPAddr, if set, serves the debug page (/debug/converge/), the
	// Prometheus metrics (/metrics) and the probes on this address while
	// the demo runs, without a token: it must be a loopback address
	// unless InsecureNoToken is set (else Run fails with an error matching
	// demo.ErrNotLoopback).
	HTTPAddr string
	// InsecureNoToken accepts an HTTPAddr that is not loopback, where
	// whoever reaches it reads the debug page and the metrics.
	InsecureNoToken bool
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
	// Checkpoint describes the step in which the store and the controller
	// were both gone.
	Checkpoint CheckpointResult
	// Deletion describes the deletion made while the controller was down.
	Deletion DeletionResult
	// DiskLoss describes the step in which the store's disk was lost and
	// the store restored from its snapshot and change log.
	DiskLoss DiskLossResult
	// Controllers counts the controllers started (one per controller
	// process, restarts included).
	Controllers int
	// BeforeShutdown counts the pods up to the shutdown; Stats includes it.
	BeforeShutdown, Stats pods.Stats
	// StartedPIDs lists every pod ever started.
	StartedPIDs []int
	// Leftover lists the started pods whose process still exists after
	// shutdown: empty unless the shutdown guarantee broke.
	Leftover []int
	// Final is the replica set as stored at the end.
	Final controller.ReplicaSet
	// StorePath is the bbolt file; ChangelogPath the directory of its
	// change log and of the snapshots the log begins from, and
	// CheckpointPath the controllers' checkpoint file, both beside it;
	// StoreKept says whether they outlive the demo.
	StorePath, ChangelogPath, CheckpointPath string
	StoreKept                                bool
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

// DeletionResult describes the deletion made while the controller was
// down: a second replica set, deleted then, whose pods the next controller
// stopped.
type DeletionResult struct {
	// Key is the replica set deleted.
	Key string
	// Pods are its pods when the controller stopped.
	Pods []int
	// Marked: with no controller running, the store kept the replica set,
	// marked for deletion, held by the controller's finalizer.
	Marked bool
	// RunningWhileDown are its pods that still ran once it was marked.
	RunningWhileDown []int
	// Gone is how long after the next controller started the replica set
	// was gone, its pods stopped.
	Gone time.Duration
	// Left are its pods whose process still existed once it was gone:
	// empty unless the finalizer's cleanup broke.
	Left []int
	// WebPods and WebPodsAfter are demoKey's pods before the controller
	// stopped and once the next one had removed the deleted replica set:
	// the same pods, which the next controller adopted.
	WebPods, WebPodsAfter []int
}

// Run runs the demo: it opens the store, ships its changes to a change
// log beside it, starts the supervisor and the controller, plays the
// scenario, shuts everything down, checks that no pod is left and writes
// a summary. It returns an error if a step did not
// converge in time or a guarantee broke; the report holds what happened
// up to then.
func Run(ctx context.Context, cfg Config) (rep Report, err error) {
	if cfg, err = cfg.withDefaults(); err != nil {
		return rep, err
	}
	dir, removeDir, err := storeDir(cfg)
	if err != nil {
		return rep, err
	}
	defer removeDir()
	rep.StoreKept = cfg.StoreDir != ""
	rep.StorePath = filepath.Join(dir, "replicasets.db")
	rep.ChangelogPath = filepath.Join(dir, "replicasets.changelog")
	rep.CheckpointPath = filepath.Join(dir, "replicaset.checkpoint")

	say := demo.NewNarrator(cfg.Out)
	sup := pods.NewSupervisor(pods.SupervisorConfig{Executable: cfg.Executable, StopGrace: time.Second, OnEvent: say.PodEvent})
	defer sup.Close()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	// The controller and the operator reach bbolt through the API-server
	// layer, over a fault store that the outages cut (demoStore).
	places := storePlaces{path: rep.StorePath, logDir: rep.ChangelogPath, insecure: cfg.InsecurePermissions, logger: cfg.Logger}
	st, err := openStore(runCtx, places, say, stop)
	if err != nil {
		return rep, err
	}
	say.Say("replicaset demo: pods are child processes of this program; store %s, its change log in %s", rep.StorePath, rep.ChangelogPath)
	r := &rig{cfg: cfg, say: say, api: st.api, sup: sup, checkpoint: rep.CheckpointPath, fail: stop}
	s := &scenario{cfg: cfg, say: say, demoStore: st, places: places, sup: sup, rig: r, rep: &rep}
	if s.proc, err = r.start(runCtx); err == nil {
		err = s.play(runCtx)
	}

	say.Say("== shutdown: stopping the controller, then every pod")
	rep.BeforeShutdown = sup.Stats()
	if s.proc != nil {
		err = errors.Join(err, s.proc.stop())
	}
	rep.Controllers = r.started
	var stopErr error
	rep.Leftover, stopErr = demo.StopPods(sup, say)
	err = errors.Join(err, stopErr)
	rep.Stats, rep.StartedPIDs = sup.Stats(), sup.Started()
	if !s.closed {
		if obj, gerr := s.db.Get(context.WithoutCancel(ctx), demoKey); gerr == nil {
			rep.Final = *obj.Value
		}
	}
	err = errors.Join(err, s.close())
	summarize(cfg.Out, &rep, err)
	return rep, err
}

// withDefaults checks cfg and fills in its defaults.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Replicas < 1 {
		return cfg, fmt.Errorf("replicas: %d, want at least 1", cfg.Replicas)
	}
	if cfg.HTTPAddr != "" {
		if err := demo.CheckLoopback(cfg.HTTPAddr, "-http", "-insecure-no-token", cfg.InsecureNoToken); err != nil {
			return cfg, err
		}
	}
	if cfg.Outage <= 0 {
		cfg.Outage = 2 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 15 * time.Second
	}
	if cfg.StartAfter <= 0 {
		cfg.StartAfter = 2 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	return cfg, nil
}

// storeDir returns cfg.StoreDir, made if need be and checked, or a
// temporary directory if it is empty, and the function that removes it
// (nothing for cfg.StoreDir).
func storeDir(cfg Config) (string, func(), error) {
	if dir := cfg.StoreDir; dir != "" {
		return dir, func() {}, privatefile.CheckPlaces(cfg.Logger, cfg.InsecurePermissions,
			privatefile.Place{Flag: "-store", Path: dir, Check: privatefile.Dir})
	}
	tmp, err := os.MkdirTemp("", "converge-replicaset-")
	if err != nil {
		return "", nil, err
	}
	return tmp, func() { os.RemoveAll(tmp) }, nil
}
