package demo

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/converge-go/converge/examples/internal/pods"
	"github.com/converge-go/converge/examples/replicaset/controller"
	"github.com/converge-go/converge/reconcile/kit/resource"
)

// Narrator writes a demo's story: one line per event, each stamped with
// the time since the demo started. It is safe for concurrent use.
type Narrator struct {
	start time.Time

	mu    sync.Mutex
	out   io.Writer
	want  int            // the pod count last asked for, for "(3/3)"
	wants map[string]int // the counts asked for other owners (SetWantOf)
}

// NewNarrator returns a narrator writing to out, its clock started now.
func NewNarrator(out io.Writer) *Narrator {
	return &Narrator{out: out, start: time.Now()}
}

// Start returns when the narrator's clock started.
func (n *Narrator) Start() time.Time { return n.start }

// Say writes one line.
func (n *Narrator) Say(format string, args ...any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	fmt.Fprintf(n.out, "[%5.2fs] %s\n", time.Since(n.start).Seconds(), fmt.Sprintf(format, args...))
}

// SetWant records the pod count the demo asks for, which PodEvent shows
// next to the count running.
func (n *Narrator) SetWant(want int) {
	n.mu.Lock()
	n.want = want
	n.mu.Unlock()
}

// SetWantOf records the pod count the demo asks for owner's pods, which
// PodEvent shows for them instead of SetWant's.
func (n *Narrator) SetWantOf(owner string, want int) {
	n.mu.Lock()
	if n.wants == nil {
		n.wants = make(map[string]int)
	}
	n.wants[owner] = want
	n.mu.Unlock()
}

// PodEvent narrates a change the supervisor saw; it is the supervisor's
// OnEvent.
func (n *Narrator) PodEvent(ev pods.PodEvent) {
	n.mu.Lock()
	want, ok := n.wants[ev.Pod.Owner]
	if !ok {
		want = n.want
	}
	count := fmt.Sprintf("(%d/%d)", ev.Running, want)
	n.mu.Unlock()
	switch ev.Kind {
	case pods.PodStarted:
		n.Say("%s: pod %d started %s", ev.Pod.Owner, ev.Pod.PID, count)
	case pods.PodStopped:
		n.Say("%s: pod %d stopped %s", ev.Pod.Owner, ev.Pod.PID, count)
	case pods.PodExited:
		n.Say("%s: pod %d died (%s) %s", ev.Pod.Owner, ev.Pod.PID, ev.Exit, count)
	case pods.PodAdopted:
		n.Say("%s: pod %d adopted %s", ev.Pod.Owner, ev.Pod.PID, count)
	}
}

// Status formats the status of rs: "2/3 ready, Ready=True, pods [4711
// 4712], observed generation 1".
func Status(rs *controller.ReplicaSet) string {
	ready := "Ready=?"
	if c, ok := resource.FindCondition(rs.Conditions, controller.ConditionReady); ok {
		ready = "Ready=" + string(c.Status)
	}
	return fmt.Sprintf("%d/%d ready, %s, pods %s, observed generation %d",
		rs.Status.ReadyReplicas, rs.Spec.Replicas, ready, PIDList(rs.Status.Pods), rs.ObservedGeneration)
}

// PIDList formats pids compactly: "[4711 4712]".
func PIDList(pids []int) string {
	parts := make([]string, len(pids))
	for i, p := range pids {
		parts[i] = fmt.Sprint(p)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// Count formats a count of things: Count(1, "pod") is "1 pod",
// Count(3, "pod") is "3 pods".
func Count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
