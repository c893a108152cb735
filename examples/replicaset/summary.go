package main

import (
	"fmt"
	"io"
)

// summarize writes what the demo did: each step, the pod counts, the
// outage, the final state and whether any pod was left behind.
func summarize(w io.Writer, rep *Report, err error) {
	line := func(label, format string, args ...any) {
		fmt.Fprintf(w, "  %-15s %s\n", label+":", fmt.Sprintf(format, args...))
	}
	fmt.Fprintln(w, "\nsummary")
	for _, p := range rep.Phases {
		line(p.Name, "%d/%d pods ready, generation %d observed, in %.2fs", p.Ready, p.Want, p.ObservedGeneration, p.Took.Seconds())
	}
	b, s := rep.BeforeShutdown, rep.Stats
	line("pods", "%d started; %d died (%d killed by the demo); %d stopped by the controller; %d stopped at shutdown",
		s.Started, b.Exited, rep.Killed, b.Stopped, s.Stopped-b.Stopped)
	if o := rep.Outage; o.Victim != 0 {
		line("outage", "store unreachable for %.1fs; pod %d killed and replaced by %s while it was down; status caught up %.1fs after it returned",
			o.Down.Seconds(), o.Victim, pidList(o.ReplacedWhileDown), o.StatusCaughtUp.Seconds())
	}
	if f := rep.Final; f.Generation > 0 {
		line("final", "%s wants %s (generation %d); status %d/%d ready, observed generation %d",
			demoKey, replicas(f.Spec.Replicas), f.Generation, f.Status.ReadyReplicas, f.Spec.Replicas, f.ObservedGeneration)
	}
	if len(rep.Leftover) == 0 {
		line("shutdown", "no pod left (%d pids checked)", len(rep.StartedPIDs))
	} else {
		line("shutdown", "PODS LEFT RUNNING: %s", pidList(rep.Leftover))
	}
	if rep.StoreKept {
		line("store", "%s (kept: run again with the same -store to resume from it)", rep.StorePath)
	} else {
		line("store", "temporary, removed (use -store DIR to keep the desired state)")
	}
	if err != nil {
		line("result", "FAILED: %v", err)
	} else {
		line("result", "ok")
	}
}

// replicas formats a replica count: "1 replica", "3 replicas".
func replicas(n int) string {
	if n == 1 {
		return "1 replica"
	}
	return fmt.Sprintf("%d replicas", n)
}
