package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/converge-go/converge/examples/internal/demo"
	"github.com/converge-go/converge/examples/internal/pods"
	"github.com/converge-go/converge/examples/replicaset/controller"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/manager"
	"github.com/converge-go/converge/reconcile/observe/convergeprom"
	"github.com/converge-go/converge/reconcile/observe/debugpage"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/checkpoint"
)

// rig starts the demo's controller as a process of its own would run
// it, and starts it again after the scenario stopped it: each start makes
// a fresh controller (nothing cached, as in a restarted process) under a
// manager of its own, with its checkpoint file opened for it and closed
// once its manager has stopped, and with the debug page and the metrics
// when Config.HTTPAddr asks for them. The store (until its disk is lost),
// the checkpoint file and the pods (children of the supervisor, as a
// node's processes are children of its agent) outlive every controller. The etcd-loss test's
// controller processes run their controller with a rig too
// (etcdlossproc_test.go).
type rig struct {
	cfg Config
	say *demo.Narrator
	// api is the store the next controller starts on (the demo's
	// disk-loss step sets the one restored).
	api store.Store[*controller.ReplicaSet]
	sup *pods.Supervisor
	// checkpoint is the path of the controllers' checkpoint file.
	checkpoint string
	// fail ends the scenario: a controller process that fails does.
	fail context.CancelFunc
	// started counts the controllers started.
	started int
}

// controllerProc is one run of the controller under its manager.
type controllerProc struct {
	ctrl   *reconcile.Controller[*controller.ReplicaSet]
	file   *checkpointFile
	cancel context.CancelFunc
	done   chan error
}

// start starts a controller and returns once its manager runs it (and
// serves, with Config.HTTPAddr). Config.OnServing hears the first
// controller's server only.
func (r *rig) start(ctx context.Context) (*controllerProc, error) {
	file, err := openCheckpointFile(r.checkpoint)
	if err != nil {
		return nil, err
	}
	ctrl, mgr, err := r.newController(file)
	if err != nil {
		return nil, errors.Join(err, file.Close())
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &controllerProc{ctrl: ctrl, file: file, cancel: cancel, done: make(chan error, 1)}
	go func() {
		err := mgr.Run(ctx)
		if err != nil || ctx.Err() == nil {
			r.fail()
		}
		p.done <- errors.Join(err, file.Close())
	}()
	r.started++
	if r.cfg.HTTPAddr == "" {
		return p, nil
	}
	base, err := serving(ctx, mgr)
	if err != nil {
		return nil, errors.Join(err, p.stop())
	}
	r.say.Say("debug page: %s/debug/converge/ · metrics: %s/metrics", base, base)
	if r.cfg.OnServing != nil && r.started == 1 {
		r.cfg.OnServing(base)
	}
	return p, nil
}

// stop stops the controller, as its process would stop on SIGTERM, and
// returns its manager's error (or its checkpoint file's).
func (p *controllerProc) stop() error {
	p.cancel()
	return <-p.done
}

// crash stops the controller as a killed process would end: from now on
// nothing it writes reaches its checkpoint file (not the last write a
// stopping controller makes), and nothing it cached outlives it.
func (p *controllerProc) crash() error {
	p.file.crash()
	return p.stop()
}

// newController returns a fresh controller, with its checkpoint in file,
// and the manager that runs it, with the debug page and the metrics of a
// registry of its own if Config.HTTPAddr is set.
func (r *rig) newController(file *checkpointFile) (*reconcile.Controller[*controller.ReplicaSet], *manager.Manager, error) {
	ccfg := controller.Config{Pods: r.sup, Exits: r.sup.Exits(), Logger: r.cfg.Logger, HeartbeatInterval: r.cfg.HeartbeatInterval,
		Checkpoint: checkpoint.Options[*controller.ReplicaSet]{Store: file, StartAfter: r.cfg.StartAfter, Interval: r.cfg.CheckpointInterval}}
	mopts := manager.Options{Logger: r.cfg.Logger, ShutdownTimeout: 10 * time.Second}
	var reg *prometheus.Registry
	var instrumented *convergeprom.Controller
	if r.cfg.HTTPAddr != "" {
		reg = prometheus.NewRegistry()
		metrics, err := convergeprom.New(reg)
		if err != nil {
			return nil, nil, err
		}
		instrumented = metrics.Controller("replicaset", convergeprom.ControllerOptions{Workers: 1, Timeout: 10 * time.Second})
		ccfg.Metrics, ccfg.QueueMetrics = instrumented, instrumented
		mopts.Server = &manager.ServerOptions{Addr: r.cfg.HTTPAddr}
	}
	ctrl, err := controller.New(r.api, ccfg)
	if err != nil {
		return nil, nil, err
	}
	mgr, err := manager.New(mopts)
	if err != nil {
		return nil, nil, err
	}
	if reg != nil {
		instrumented.Watch(ctrl)
		if err := errors.Join(
			mgr.Handle("/debug/converge/", debugpage.New(debugpage.Options{IsLeader: mgr.IsLeader}, ctrl)),
			mgr.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{})),
		); err != nil {
			return nil, nil, err
		}
	}
	return ctrl, mgr, mgr.Add(ctrl)
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
