package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/converge-go/converge/examples/internal/demo"
	"github.com/converge-go/converge/examples/replicaset/controller"
	"github.com/converge-go/converge/store"
)

// watchStore narrates every change of spec or status in s until ctx ends.
// It reads the store directly: the narrator sees what is stored even while
// the controller cannot reach it.
func watchStore(ctx context.Context, say *demo.Narrator, s store.Store[*controller.ReplicaSet]) error {
	objs, rev, err := s.List(ctx, "")
	if err != nil {
		return fmt.Errorf("narrator: list: %w", err)
	}
	last := make(map[string]*controller.ReplicaSet, len(objs))
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
				say.Say("%s: deleted", ev.Object.Key)
				delete(last, ev.Object.Key)
				continue
			}
			change(say, ev.Object.Key, last[ev.Object.Key], ev.Object.Value)
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
func change(say *demo.Narrator, key string, old, cur *controller.ReplicaSet) {
	if old == nil || cur.Generation != old.Generation {
		say.Say("%s: spec: %s (generation %d)", key, demo.Count(cur.Spec.Replicas, "replica"), cur.Generation)
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
