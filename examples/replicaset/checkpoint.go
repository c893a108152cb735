package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/converge-go/converge/examples/internal/demo"
	"github.com/converge-go/converge/examples/replicaset/controller"
	"github.com/converge-go/converge/store/boltstore"
	"github.com/converge-go/converge/store/checkpoint"
	"github.com/converge-go/converge/store/faultstore"
)

// stepBothGone is the name of the step in which the store and the
// controller are both gone.
const stepBothGone = "both gone"

// CheckpointResult describes the step in which the store and the
// controller were both gone: the store's network cut, the controller
// crashed and a fresh one started, which ran from its checkpoint.
type CheckpointResult struct {
	// StartAfter is the documented bound: a controller that cannot list
	// its store within it starts from its checkpoint.
	StartAfter time.Duration
	// Written is the revision of the replica set's latest change, which
	// the checkpoint held when the controller crashed, and Generation its
	// spec's generation then.
	Written    int64
	Generation int64
	// Victim is the pod killed while neither the store nor a controller
	// was there.
	Victim int
	// ActiveAfter is how long after the fresh controller started it ran
	// from its checkpoint: StartAfter and a little.
	ActiveAfter time.Duration
	// Health is the fresh controller's Health.Checkpoint once it had
	// replaced the victim, the store still unreachable.
	Health checkpoint.Status
	// ReplacedWhileDown lists the pods started while the store was down.
	ReplacedWhileDown []int
	// Down is how long the store was unreachable, and CaughtUp how long
	// after it returned the controller followed it again, the status
	// recording the running pods.
	Down, CaughtUp time.Duration
}

// storeAndControllerGone shows the checkpoint at work: the store's network
// is cut and the controller crashes, as a killed process would, once its
// checkpoint holds the replica set's latest change; a pod is killed
// meanwhile. A fresh controller, nothing cached, starts while the store is
// still unreachable: after StartAfter it reconciles from its checkpoint,
// replacing the pod, and Health says so. The store returns and everything
// converges, the spec as it was.
func (s *scenario) storeAndControllerGone(ctx context.Context) error {
	start := time.Now()
	out := &s.rep.Checkpoint
	out.StartAfter = s.cfg.StartAfter
	s.say.Say("== the store and the controller both gone, the world still healed")
	obj, err := s.db.Get(ctx, demoKey)
	if err != nil {
		return fmt.Errorf("%s: %w", stepBothGone, err)
	}
	out.Written, out.Generation = obj.Revision, obj.Value.Generation
	if err := s.waitFor(ctx, fmt.Sprintf("the checkpoint to hold revision %d", obj.Revision), func() (bool, error) {
		return s.proc.ctrl.Health().Checkpoint.Revision >= obj.Revision, nil
	}); err != nil {
		return err
	}
	s.say.Say("controller: its checkpoint %s holds revision %d (%s wanted, generation %d)",
		filepath.Base(s.rep.CheckpointPath), obj.Revision, demo.Count(obj.Value.Spec.Replicas, "replica"), out.Generation)

	s.say.Say("== the store's network is cut, and the controller crashes: its process gone, nothing cached")
	s.net.SetOutage(faultstore.Loud)
	downAt := time.Now()
	if err := s.proc.crash(); err != nil {
		return fmt.Errorf("%s: crash the controller: %w", stepBothGone, err)
	}
	victim := s.sup.Running(demoKey)[0]
	out.Victim = victim.PID
	s.say.Say("== kill pod %d, with neither a store nor a controller", victim.PID)
	if s.sup.Signal(victim.PID, syscall.SIGKILL) {
		s.rep.Killed++
	}
	if err := s.waitFor(ctx, fmt.Sprintf("pod %d to die", victim.PID), func() (bool, error) {
		return !s.sup.Alive(victim.PID), nil
	}); err != nil {
		return err
	}

	s.say.Say("== a fresh controller starts, the store still unreachable: it tries the store for %v, then starts from its checkpoint", out.StartAfter)
	startedAt := time.Now()
	if s.proc, err = s.rig.start(ctx); err != nil {
		return err
	}
	if err := demo.WaitFor(ctx, "the controller to run from its checkpoint", out.StartAfter+s.cfg.Timeout, func() (bool, error) {
		return s.proc.ctrl.Health().Checkpoint.Active, nil
	}); err != nil {
		return err
	}
	out.ActiveAfter = time.Since(startedAt)
	if err := s.waitFor(ctx, "a replacement pod from the checkpoint", func() (bool, error) {
		return !s.sup.Alive(victim.PID) && len(s.sup.Running(demoKey)) == s.want, nil
	}); err != nil {
		return err
	}
	for _, p := range s.sup.Running(demoKey) {
		if p.Started.After(downAt) {
			out.ReplacedWhileDown = append(out.ReplacedWhileDown, p.PID)
		}
	}
	out.Health = s.proc.ctrl.Health().Checkpoint
	if !out.Health.Active {
		return fmt.Errorf("%s: the controller stopped running from its checkpoint with the store unreachable", stepBothGone)
	}
	s.say.Say("controller: runs from its checkpoint of revision %d, %v old (from it %.1fs after it started); pod %d replaced by %s",
		out.Health.Revision, out.Health.Age.Round(time.Millisecond), out.ActiveAfter.Seconds(), victim.PID, demo.PIDList(out.ReplacedWhileDown))

	upAt := time.Now()
	out.Down = upAt.Sub(downAt)
	s.net.SetOutage(faultstore.Up)
	s.say.Say("== store reachable again after %.1fs", out.Down.Seconds())
	res, err := s.settle(ctx, stepBothGone, start, func() bool {
		h := s.proc.ctrl.Health()
		return !h.Checkpoint.Active && len(h.Degraded) == 0
	})
	if err != nil {
		return err
	}
	out.CaughtUp = time.Since(upAt)
	s.say.Say("controller: following the store again, %.1fs after it returned; spec generation %d kept, nothing lost",
		out.CaughtUp.Seconds(), res.Generation)
	return nil
}

// checkpointFile is one controller process's checkpoint file
// (boltstore.OpenCheckpoint), which can die with its process: once crashed,
// no write reaches the file, as none would from a killed process.
type checkpointFile struct {
	*boltstore.Checkpoint[*controller.ReplicaSet]
	crashed atomic.Bool
}

// openCheckpointFile opens the checkpoint file at path, creating it if
// need be.
func openCheckpointFile(path string) (*checkpointFile, error) {
	cp, err := boltstore.OpenCheckpoint[*controller.ReplicaSet](path)
	if err != nil {
		return nil, err
	}
	return &checkpointFile{Checkpoint: cp}, nil
}

// Write writes b, unless the process crashed: then nothing is written,
// and the controller, which is stopping, is not told.
func (f *checkpointFile) Write(b checkpoint.Batch[*controller.ReplicaSet]) error {
	if f.crashed.Load() {
		return nil
	}
	return f.Checkpoint.Write(b)
}

// crash makes every later Write a write that never happens.
func (f *checkpointFile) crash() { f.crashed.Store(true) }
