package main

import (
	"io"
	"time"

	"github.com/converge-go/converge/examples/internal/demo"
)

// summarize writes what the demo did: each step, the pod counts, the
// outage, the start from the checkpoint, the deletion, the restore after
// the disk loss, the final state and whether any pod was left behind.
func summarize(w io.Writer, rep *Report, err error) {
	sum := demo.NewSummary(w)
	for _, p := range rep.Phases {
		sum.Line(p.Name, "%d/%d pods ready, generation %d observed, in %.2fs", p.Ready, p.Want, p.ObservedGeneration, p.Took.Seconds())
	}
	b, s := rep.BeforeShutdown, rep.Stats
	sum.Line("pods", "%d started; %d died (%d killed by the demo); %d stopped by the controller; %d stopped at shutdown",
		s.Started, b.Exited, rep.Killed, b.Stopped, s.Stopped-b.Stopped)
	if o := rep.Outage; o.Victim != 0 {
		sum.Line("outage", "store unreachable for %.1fs; pod %d killed and replaced by %s while it was down; status caught up %.1fs after it returned",
			o.Down.Seconds(), o.Victim, demo.PIDList(o.ReplacedWhileDown), o.StatusCaughtUp.Seconds())
	}
	if c := rep.Checkpoint; c.CaughtUp > 0 {
		sum.Line("checkpoint", "store and controller gone: a fresh controller ran from its checkpoint (revision %d, %v old) %.1fs after it started (StartAfter %v); pod %d replaced by %s; caught up %.1fs after the store returned, generation %d kept",
			c.Health.Revision, c.Health.Age.Round(time.Millisecond), c.ActiveAfter.Seconds(), c.StartAfter, c.Victim, demo.PIDList(c.ReplacedWhileDown), c.CaughtUp.Seconds(), c.Generation)
	}
	if d := rep.Deletion; d.Key != "" && d.Gone > 0 {
		sum.Line("deletion", "%s deleted while the controller was down: kept, marked, its pods %s running; gone %v after the controller started again, its pods stopped first",
			d.Key, demo.PIDList(d.RunningWhileDown), d.Gone.Round(time.Millisecond))
	}
	if d := rep.DiskLoss; d.Reconciled > 0 {
		sum.Line("disk loss", "%s scaled to %d at revision %d, in the change log %v later, the disk lost %v after the write; restored in %v from the snapshot at revision %d and %s, the write present, as a new store above revision %d; reconciled by the controller %v after it started, %s stopped",
			demoKey, d.Want, d.Acked, d.Shipped.Round(time.Millisecond), d.Lost.Round(time.Millisecond), d.RestoreTook.Round(time.Millisecond),
			d.Point.SnapshotRevision, demo.Count(d.Point.Records, "record"), d.Restored.Revision, d.Reconciled.Round(time.Millisecond), demo.Count(d.Stopped, "pod"))
	}
	if f := rep.Final; f.Generation > 0 {
		sum.Line("final", "%s wants %s (generation %d); status %d/%d ready, observed generation %d",
			demoKey, demo.Count(f.Spec.Replicas, "replica"), f.Generation, f.Status.ReadyReplicas, f.Spec.Replicas, f.ObservedGeneration)
	}
	if len(rep.Leftover) == 0 {
		sum.Line("shutdown", "no pod left (%d pids checked)", len(rep.StartedPIDs))
	} else {
		sum.Line("shutdown", "PODS LEFT RUNNING: %s", demo.PIDList(rep.Leftover))
	}
	if rep.StoreKept {
		sum.Line("store", "%s (kept: run again with the same -store to resume from it)", rep.StorePath)
	} else {
		sum.Line("store", "temporary, removed (use -store DIR to keep the desired state)")
	}
	sum.Result(err)
}
