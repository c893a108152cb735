package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/converge-go/converge/examples/replicaset/replicaset"
	"github.com/converge-go/converge/reconcile/resource"
	"github.com/converge-go/converge/store"
)

// narrator writes the demo's story: one line per event, each stamped with
// the time since the demo started. It is safe for concurrent use.
type narrator struct {
	start time.Time

	mu      sync.Mutex
	out     io.Writer
	want    int   // the pod count the operator last asked for, for "(3/3)"
	written int64 // the revision of the last status write narrated
}

func newNarrator(out io.Writer) *narrator {
	return &narrator{out: out, start: time.Now()}
}

// say writes one line.
func (n *narrator) say(format string, args ...any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sayLocked(format, args...)
}

func (n *narrator) sayLocked(format string, args ...any) {
	fmt.Fprintf(n.out, "[%5.2fs] %s\n", time.Since(n.start).Seconds(), fmt.Sprintf(format, args...))
}

// setWant records the pod count the operator asks for.
func (n *narrator) setWant(want int) {
	n.mu.Lock()
	n.want = want
	n.mu.Unlock()
}

// podEvent narrates a change the supervisor saw.
func (n *narrator) podEvent(ev replicaset.PodEvent) {
	n.mu.Lock()
	defer n.mu.Unlock()
	count := fmt.Sprintf("(%d/%d)", ev.Running, n.want)
	switch ev.Kind {
	case replicaset.PodStarted:
		n.sayLocked("pod %d started %s", ev.Pod.PID, count)
	case replicaset.PodStopped:
		n.sayLocked("pod %d stopped %s", ev.Pod.PID, count)
	case replicaset.PodExited:
		n.sayLocked("pod %d died (%s) %s", ev.Pod.PID, ev.Exit, count)
	}
}

// termStarted narrates a new leader.
func (n *narrator) termStarted(t Term) {
	n.say("%s leads (lease token %d): its controller starts", t.Replica, t.Token)
}

// termEnded narrates the end of a term.
func (n *narrator) termEnded(t Term) {
	n.say("%s no longer leads (token %d)", t.Replica, t.Token)
}

// statusWritten narrates a status write the controller of replica made
// in the term of token.
func (n *narrator) statusWritten(replica string, token int64, obj store.Object[*replicaset.ReplicaSet]) {
	rs := obj.Value
	ready := "Ready=?"
	if c, ok := resource.FindCondition(rs.Conditions, replicaset.ConditionReady); ok {
		ready = "Ready=" + string(c.Status)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sayLocked("%s (token %d) wrote status: %d/%d ready, %s, pods %s, generation %d",
		replica, token, rs.Status.ReadyReplicas, rs.Spec.Replicas, ready, pidList(rs.Status.Pods), rs.ObservedGeneration)
	n.written = max(n.written, obj.Revision)
}

// writtenRevision returns the revision of the last status write narrated,
// so that the scenario moves on only once the story has caught up.
func (n *narrator) writtenRevision() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.written
}

// summarize writes what the demo did.
func summarize(w io.Writer, rep *Report, err error) {
	line := func(label, format string, args ...any) {
		fmt.Fprintf(w, "  %-11s %s\n", label+":", fmt.Sprintf(format, args...))
	}
	fmt.Fprintln(w, "\nsummary")
	for _, p := range rep.Phases {
		line(p.Name, "%s converged %d/%d pods, generation %d observed, %d started, in %.2fs",
			p.Leader, len(p.Pods), p.Want, p.ObservedGeneration, p.Started, p.Took.Seconds())
	}
	if c := rep.Crash; c.New.Token != 0 {
		kept := "record released (!)"
		if c.RecordKept {
			kept = "lease not released"
		}
		line("handover", "%s (token %d) crashed, %s; %s (token %d) took over after %.2fs, lease TTL %v",
			c.Old.Replica, c.Old.Token, kept, c.New.Replica, c.New.Token, c.Handover.Seconds(), rep.TTL)
	}
	if l := rep.LateWrite; l.Term.Token != 0 {
		verdict := "ACCEPTED (!)"
		if errors.Is(l.Err, store.ErrGuardFailed) {
			verdict = "rejected with store.ErrGuardFailed"
		}
		line("fencing", "write of %s's term (token %d), delivered after the takeover, %s", l.Term.Replica, l.Term.Token, verdict)
	}
	if len(rep.Terms) > 0 {
		parts := make([]string, len(rep.Terms))
		for i, t := range rep.Terms {
			end := "-"
			if !t.End.IsZero() {
				end = fmt.Sprintf("%.2fs", t.End.Sub(rep.Start).Seconds())
			}
			parts[i] = fmt.Sprintf("%s token %d [%.2fs, %s]", t.Replica, t.Token, t.Start.Sub(rep.Start).Seconds(), end)
		}
		verdict := "one leader at a time"
		if _, _, found := overlap(rep.Terms); found {
			verdict = "OVERLAP"
		}
		line("terms", "%s: %s", verdict, strings.Join(parts, ", "))
	}
	if len(rep.Leftover) == 0 {
		line("pods", "%d started, %d stopped by controllers or at shutdown, none left", rep.Stats.Started, rep.Stats.Stopped)
	} else {
		line("pods", "PODS LEFT RUNNING: %s", pidList(rep.Leftover))
	}
	line("goroutines", "%d before, %d after", rep.GoroutinesBefore, rep.GoroutinesAfter)
	if err != nil {
		line("result", "FAILED: %v", err)
	} else {
		line("result", "ok")
	}
}

// pods formats a pod count: "1 pod", "3 pods".
func pods(n int) string {
	if n == 1 {
		return "1 pod"
	}
	return fmt.Sprintf("%d pods", n)
}

// pidList formats pids compactly: "[4711 4712]".
func pidList(pids []int) string {
	parts := make([]string, len(pids))
	for i, p := range pids {
		parts[i] = fmt.Sprint(p)
	}
	return "[" + strings.Join(parts, " ") + "]"
}
