package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/converge-go/converge/examples/internal/demo"
	"github.com/converge-go/converge/examples/replicaset/controller"
	"github.com/converge-go/converge/store"
)

// narrator tells the demo's story (demo.Narrator) and what only this demo
// has: terms of leadership and the status writes made in each. It is safe
// for concurrent use.
type narrator struct {
	*demo.Narrator

	mu      sync.Mutex
	written int64 // the revision of the last status write narrated
}

func newNarrator(out io.Writer) *narrator {
	return &narrator{Narrator: demo.NewNarrator(out)}
}

// termStarted narrates a new leader.
func (n *narrator) termStarted(t Term) {
	n.Say("%s leads (lease token %d): its controller starts", t.Replica, t.Token)
}

// termEnded narrates the end of a term.
func (n *narrator) termEnded(t Term) {
	n.Say("%s no longer leads (token %d)", t.Replica, t.Token)
}

// statusWritten narrates a status write the controller of replica made
// in the term of token.
func (n *narrator) statusWritten(replica string, token int64, obj store.Object[*controller.ReplicaSet]) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.Say("%s (token %d) wrote status: %s", replica, token, demo.Status(obj.Value))
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
	sum := demo.NewSummary(w)
	for _, p := range rep.Phases {
		sum.Line(p.Name, "%s converged %d/%d pods, generation %d observed, %d started, in %.2fs",
			p.Leader, len(p.Pods), p.Want, p.ObservedGeneration, p.Started, p.Took.Seconds())
	}
	if c := rep.Crash; c.New.Token != 0 {
		kept := "record released (!)"
		if c.RecordKept {
			kept = "lease not released"
		}
		sum.Line("handover", "%s (token %d) crashed, %s; %s (token %d) took over after %.2fs, lease TTL %v",
			c.Old.Replica, c.Old.Token, kept, c.New.Replica, c.New.Token, c.Handover.Seconds(), rep.TTL)
	}
	if l := rep.LateWrite; l.Term.Token != 0 {
		verdict := "ACCEPTED (!)"
		if errors.Is(l.Err, store.ErrGuardFailed) {
			verdict = "rejected with store.ErrGuardFailed"
		}
		sum.Line("fencing", "write of %s's term (token %d), delivered after the takeover, %s", l.Term.Replica, l.Term.Token, verdict)
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
		sum.Line("terms", "%s: %s", verdict, strings.Join(parts, ", "))
	}
	if len(rep.Leftover) == 0 {
		sum.Line("pods", "%d started, %d stopped by controllers or at shutdown, none left", rep.Stats.Started, rep.Stats.Stopped)
	} else {
		sum.Line("pods", "PODS LEFT RUNNING: %s", demo.PIDList(rep.Leftover))
	}
	sum.Line("goroutines", "%d before, %d after", rep.GoroutinesBefore, rep.GoroutinesAfter)
	sum.Result(err)
}
