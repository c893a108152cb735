package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/converge-go/converge/examples/internal/demo"
	"github.com/converge-go/converge/examples/replicaset/controller"
	"github.com/converge-go/converge/store"
)

// storeNarrator narrates every change of spec or status in the store. It
// reads the store directly: it sees what is stored even while the
// controller cannot reach it. The scenario waits for it (caughtUp) so that
// the story tells each change before the step that follows it.
type storeNarrator struct {
	say *demo.Narrator
	s   store.Store[*controller.ReplicaSet]
	// seen is the revision of the last change narrated (or of the first
	// list).
	seen atomic.Int64
}

// run narrates until ctx ends.
func (n *storeNarrator) run(ctx context.Context) error {
	objs, rev, err := n.s.List(ctx, "")
	if err != nil {
		return fmt.Errorf("narrator: list: %w", err)
	}
	last := make(map[string]*controller.ReplicaSet, len(objs))
	for _, o := range objs {
		last[o.Key] = o.Value
	}
	n.seen.Store(rev)
	for {
		w, err := n.s.Watch(ctx, "", rev)
		if err != nil {
			return fmt.Errorf("narrator: watch: %w", err)
		}
		for ev := range w.Events() {
			rev = ev.Object.Revision
			if ev.Type == store.Deleted {
				n.say.Say("%s: deleted", ev.Object.Key)
				delete(last, ev.Object.Key)
			} else {
				change(n.say, ev.Object.Key, last[ev.Object.Key], ev.Object.Value)
				last[ev.Object.Key] = ev.Object.Value
			}
			n.seen.Store(rev)
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

// caughtUp waits, within limit, until the narrator has told every change
// up to revision rev.
func (n *storeNarrator) caughtUp(ctx context.Context, rev int64, limit time.Duration) error {
	return demo.WaitFor(ctx, fmt.Sprintf("the narrator to tell revision %d", rev), limit, func() (bool, error) {
		return n.seen.Load() >= rev, nil
	})
}

// change narrates the difference between two stored versions of a replica set.
func change(say *demo.Narrator, key string, old, cur *controller.ReplicaSet) {
	if old == nil || cur.Generation != old.Generation {
		say.Say("%s: spec: %s (generation %d)", key, demo.Count(cur.Spec.Replicas, "replica"), cur.Generation)
	}
	if cur.HasFinalizer(controller.Finalizer) && (old == nil || !old.HasFinalizer(controller.Finalizer)) {
		say.Say("%s: finalizer %s added (the controller adds it before it starts a pod)", key, controller.Finalizer)
	}
	if cur.Deleting() && (old == nil || !old.Deleting()) {
		say.Say("%s: marked for deletion; the store keeps it until its finalizers %v are removed", key, cur.Finalizers)
	}
	if old != nil && cur.ObservedGeneration == old.ObservedGeneration &&
		cur.Status.ReadyReplicas == old.Status.ReadyReplicas && slices.Equal(cur.Status.Pods, old.Status.Pods) {
		return
	}
	if cur.ObservedGeneration == 0 {
		return // no status written yet
	}
	say.Say("%s: status written: %s", key, demo.Status(cur))
}
