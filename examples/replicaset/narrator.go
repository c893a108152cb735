package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/converge-go/converge/reconcile/resource"
	"github.com/converge-go/converge/store"
)

// narrator writes the demo's story: one line per change, each stamped with
// the time since the demo started. It is safe for concurrent use.
type narrator struct {
	start time.Time

	mu   sync.Mutex
	out  io.Writer
	want int // the replica count the demo last asked for, for "(3/3)"
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

// setWant records the replica count the demo asks for.
func (n *narrator) setWant(want int) {
	n.mu.Lock()
	n.want = want
	n.mu.Unlock()
}

// podEvent narrates a change the supervisor saw.
func (n *narrator) podEvent(ev PodEvent) {
	n.mu.Lock()
	defer n.mu.Unlock()
	count := fmt.Sprintf("(%d/%d)", ev.Running, n.want)
	switch ev.Kind {
	case PodStarted:
		n.sayLocked("%s: started pod %d %s", ev.Pod.Owner, ev.Pod.PID, count)
	case PodStopped:
		n.sayLocked("%s: stopped pod %d %s", ev.Pod.Owner, ev.Pod.PID, count)
	case PodExited:
		n.sayLocked("%s: pod %d died (%s) %s", ev.Pod.Owner, ev.Pod.PID, ev.Exit, count)
	}
}

// watchStore narrates every change of spec or status in s until ctx ends.
// It reads the store directly: the narrator sees what is stored even while
// the controller cannot reach it.
func (n *narrator) watchStore(ctx context.Context, s store.Store[*ReplicaSet]) error {
	objs, rev, err := s.List(ctx, "")
	if err != nil {
		return fmt.Errorf("narrator: list: %w", err)
	}
	last := make(map[string]*ReplicaSet, len(objs))
	for _, o := range objs {
		last[o.Key] = o.Value
	}
	for {
		w, err := s.Watch(ctx, "", rev)
		if err != nil {
			return fmt.Errorf("narrator: watch: %w", err)
		}
		for ev := range w.Events() {
			rev = ev.Object.Revision
			if ev.Type == store.Deleted {
				n.say("%s: deleted", ev.Object.Key)
				delete(last, ev.Object.Key)
				continue
			}
			n.change(ev.Object.Key, last[ev.Object.Key], ev.Object.Value)
			last[ev.Object.Key] = ev.Object.Value
		}
		err = w.Err()
		w.Stop()
		if ctx.Err() != nil {
			return nil
		}
		if !errors.Is(err, store.ErrLagging) {
			return fmt.Errorf("narrator: watch ended: %w", err)
		}
	}
}

// change narrates the difference between two stored versions of a replica set.
func (n *narrator) change(key string, old, cur *ReplicaSet) {
	if old == nil || cur.Generation != old.Generation {
		n.say("%s: spec: %s (generation %d)", key, replicas(cur.Spec.Replicas), cur.Generation)
	}
	if old != nil && cur.ObservedGeneration == old.ObservedGeneration &&
		cur.Status.ReadyReplicas == old.Status.ReadyReplicas && slices.Equal(cur.Status.Pods, old.Status.Pods) {
		return
	}
	if cur.ObservedGeneration == 0 {
		return // no status written yet
	}
	ready := "Ready=?"
	if c, ok := resource.FindCondition(cur.Conditions, ConditionReady); ok {
		ready = "Ready=" + string(c.Status)
	}
	n.say("%s: status written: %d/%d ready, %s, pods %s, observed generation %d",
		key, cur.Status.ReadyReplicas, cur.Spec.Replicas, ready, pidList(cur.Status.Pods), cur.ObservedGeneration)
}

// pidList formats pids compactly: "[4711 4712]".
func pidList(pids []int) string {
	parts := make([]string, len(pids))
	for i, p := range pids {
		parts[i] = fmt.Sprint(p)
	}
	return "[" + strings.Join(parts, " ") + "]"
}
