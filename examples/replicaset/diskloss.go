package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/converge-go/converge/examples/internal/demo"
	"github.com/converge-go/converge/examples/replicaset/controller"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store/boltstore"
	"github.com/converge-go/converge/store/changelog"
	"github.com/converge-go/converge/store/faultstore"
	"github.com/converge-go/converge/store/snapshot"
)

// stepDiskLost is the name of the step in which the store's disk is lost.
const stepDiskLost = "disk lost"

// DiskLossResult describes the step in which the store's disk was lost: a
// spec written, the store's file lost a moment after the write was
// acknowledged, a new store restored from the snapshot and the change log,
// and the controller started again on it.
type DiskLossResult struct {
	// Want is the replica count of the spec written before the loss, and
	// Acked and Generation the revision and generation the store
	// acknowledged it with.
	Want              int
	Acked, Generation int64
	// Shipped is how long after the acknowledgement the change log had
	// synced the write, and Lost how long after it the disk was lost.
	Shipped, Lost time.Duration
	// Identity is the lost store's identity, and Revision its last
	// revision.
	Identity string
	Revision int64
	// Point is what the restore read: the snapshot it began from, the
	// records of the change log applied on it, the revision it reached.
	Point changelog.Point
	// Restored is the new store: its identity, never the lost store's, and
	// its revision, above every revision of the lost store. RestoreTook is
	// how long reading the log and making the new file took.
	Restored    snapshot.Restored
	RestoreTook time.Duration
	// Found is the replica set as the restored store held it before a
	// controller ran on it: with the write, Want replicas at Generation.
	Found controller.ReplicaSet
	// PodsAtLoss are the pods that ran when the disk was lost: those the
	// controller had started for the write by then among them.
	PodsAtLoss []int
	// Reconciled is how long after the controller started on the restored
	// store it had reconciled every key of it (WaitForRevision), and
	// Stopped counts the pods stopped from the write on: none, unless the
	// write was undone.
	Reconciled time.Duration
	Stopped    int
}

// diskLost shows the change log at work. The replica set is scaled by one;
// a moment after the store acknowledged the write, once the change log
// (beside the store, as it would be on another disk) holds it, the store's
// disk is lost: nothing reaches the store any more, the controller stops,
// the file is deleted. A new file is restored from the snapshot the log
// began from and the log: a new identity, every revision above the lost
// store's, and the write present. The controller starts again on it and
// converges to that spec, undoing nothing.
func (s *scenario) diskLost(ctx context.Context) error {
	start := time.Now()
	out := &s.rep.DiskLoss
	stopped := s.sup.Stats().Stopped
	out.Want = s.want + 1
	s.say.Say("== the store's disk lost, a moment after a write: %s scaled to %s", demoKey, demo.Count(out.Want, "replica"))
	s.setWant(out.Want)
	obj, err := resource.PutSpec(ctx, s.api, demoKey, controller.Spec{Replicas: out.Want})
	if err != nil {
		return fmt.Errorf("%s: put spec: %w", stepDiskLost, err)
	}
	ackAt := time.Now()
	out.Acked, out.Generation = obj.Revision, obj.Value.Generation
	if err := s.waitFor(ctx, fmt.Sprintf("the change log to sync revision %d", obj.Revision), func() (bool, error) {
		return s.shipper.Synced() >= obj.Revision, nil
	}); err != nil {
		return err
	}
	out.Shipped = time.Since(ackAt)
	s.say.Say("the store acknowledged it at revision %d (generation %d); the change log synced it %v later (it syncs within %v of a change)",
		out.Acked, out.Generation, out.Shipped.Round(time.Millisecond), changelog.DefaultSyncEvery)
	if err := s.loseDisk(ctx, ackAt); err != nil {
		return err
	}
	if err := s.restore(ctx); err != nil {
		return err
	}

	s.say.Say("== the controller starts again, on the restored store")
	startedAt := time.Now()
	if s.proc, err = s.rig.start(ctx); err != nil {
		return err
	}
	waitCtx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	if err := s.proc.ctrl.WaitForRevision(waitCtx, out.Restored.Revision); err != nil {
		return fmt.Errorf("%s: waiting for the controller to reconcile the restored store: %w", stepDiskLost, err)
	}
	reconciled := time.Since(startedAt)
	res, err := s.settle(ctx, stepDiskLost, start, nil)
	if err != nil {
		return err
	}
	out.Reconciled, out.Stopped = reconciled, s.sup.Stats().Stopped-stopped
	s.say.Say("controller: reconciled the restored store %v after it started: %s ready, generation %d observed; the pods that ran at the loss %s run on, %s stopped",
		out.Reconciled.Round(time.Millisecond), demo.Count(res.Ready, "pod"), res.ObservedGeneration, demo.PIDList(out.PodsAtLoss), demo.Count(out.Stopped, "pod"))
	return nil
}

// loseDisk loses the store's disk: the network to the store is cut, so
// that nothing more is stored; the controller stops; the narrator tells
// the store's last changes; the shipper stops, having synced what it
// received; the file is closed and deleted.
func (s *scenario) loseDisk(ctx context.Context, ackAt time.Time) error {
	out := &s.rep.DiskLoss
	s.net.SetOutage(faultstore.Loud)
	out.Lost, out.PodsAtLoss = time.Since(ackAt), pidsOf(s.sup.Running(demoKey))
	s.say.Say("== the disk is lost %v after the acknowledgement: nothing reaches the store; the controller stops; %s is deleted",
		out.Lost.Round(time.Millisecond), filepath.Base(s.places.path))
	err := s.proc.stop()
	s.proc = nil // stopped: Run does not stop it again
	if err != nil {
		return fmt.Errorf("%s: stop the controller: %w", stepDiskLost, err)
	}
	out.Identity = s.identity
	if out.Revision, err = s.db.Revision(ctx); err == nil {
		err = s.narrator.caughtUp(ctx, out.Revision, s.cfg.Timeout)
	}
	if err == nil {
		err = s.close()
	}
	if err == nil {
		err = os.Remove(s.places.path)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", stepDiskLost, err)
	}
	return nil
}

// restore makes a new store file from the snapshot and the change log,
// opens it in place of the lost one and checks that it holds the write
// acknowledged before the loss, under a new identity above every revision
// of the lost store.
func (s *scenario) restore(ctx context.Context) error {
	out := &s.rep.DiskLoss
	began := time.Now()
	r, p, err := changelog.Archive{Dir: s.places.logDir, Identity: out.Identity}.State(ctx, changelog.Target{})
	if err != nil {
		return fmt.Errorf("%s: read the change log: %w", stepDiskLost, err)
	}
	out.Point = p
	if out.Restored, err = boltstore.Restore(s.places.path, r); err != nil {
		return fmt.Errorf("%s: restore: %w", stepDiskLost, err)
	}
	out.RestoreTook = time.Since(began)
	s.say.Say("== restored in %v from the snapshot the log begins with (revision %d) and %s of the log: the store as it was at revision %d, the last the log holds",
		out.RestoreTook.Round(time.Millisecond), p.SnapshotRevision, demo.Count(p.Records, "record"), p.Revision)
	st, err := openStore(ctx, s.places, s.say, s.rig.fail)
	if err != nil {
		return err
	}
	s.demoStore, s.rig.api = st, st.api
	obj, err := s.db.Get(ctx, demoKey)
	if err != nil {
		return fmt.Errorf("%s: the restored store: %w", stepDiskLost, err)
	}
	out.Found = *obj.Value
	s.say.Say("the restored store: identity %s, not the lost %s; revisions go on above %d, past the lost store's %d; %s wants %s, generation %d",
		out.Restored.Identity, out.Identity, out.Restored.Revision, out.Revision, demoKey, demo.Count(out.Found.Spec.Replicas, "replica"), out.Found.Generation)
	if err := s.waitFor(ctx, "the change log to begin from the restored store", func() (bool, error) {
		return s.shipper.Synced() >= out.Restored.Revision, nil
	}); err != nil {
		return err
	}
	s.say.Say("its changes are shipped on into the same log, under its identity, from a snapshot of it at revision %d", s.shipper.Synced())
	switch {
	case out.Found.Spec.Replicas != out.Want || out.Found.Generation != out.Generation:
		return fmt.Errorf("%s: the restored store lost the write acknowledged at revision %d: %s wants %d replicas at generation %d, not %d at %d",
			stepDiskLost, out.Acked, demoKey, out.Found.Spec.Replicas, out.Found.Generation, out.Want, out.Generation)
	case out.Restored.Identity == out.Identity || out.Restored.Revision <= out.Revision:
		return fmt.Errorf("%s: the restored store has identity %s at revision %d: want a new one above %d", stepDiskLost, out.Restored.Identity, out.Restored.Revision, out.Revision)
	}
	return nil
}
