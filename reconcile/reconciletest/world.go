package reconciletest

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/converge-go/converge/reconcile"
)

// World is a pretend world for tests of reconcilers that act on something
// outside the store: a count of running things per key (the pods of a
// replica set, the workers of a pool) that a reconciler scales, and that
// reports its disturbances to the controller through Source, as a watch of
// the real world would. It is safe for concurrent use.
type World struct {
	mu     sync.Mutex
	counts map[string]int
	events chan string
}

// NewWorld returns an empty world that can hold up to backlog unreported
// disturbances before Disturb blocks.
func NewWorld(backlog int) *World {
	return &World{counts: map[string]int{}, events: make(chan string, backlog)}
}

// Count returns how many things run for key.
func (w *World) Count(key string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.counts[key]
}

// Scale makes n things run for key (0 removes the key).
func (w *World) Scale(key string, n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n == 0 {
		delete(w.counts, key)
		return
	}
	w.counts[key] = n
}

// Snapshot returns a copy of every key's count, for comparisons (it fits
// Env.CheckIdempotent's world function once wrapped).
func (w *World) Snapshot() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.counts)
}

// Disturb stops everything running for key, as a crash would, and reports
// it through Source.
func (w *World) Disturb(key string) {
	w.Scale(key, 0)
	w.events <- key
}

// Source reports the world to a controller: when it starts, every key that
// has something running (as a controller's list of its pods would find the
// pods of a set deleted while no controller ran), then every disturbance.
func (w *World) Source() reconcile.Source {
	return reconcile.SourceFunc(func(ctx context.Context, enqueue func(string)) error {
		w.mu.Lock()
		keys := slices.Sorted(maps.Keys(w.counts))
		w.mu.Unlock()
		for _, key := range keys {
			enqueue(key)
		}
		return reconcile.FromChannel(w.events).Start(ctx, enqueue)
	})
}
