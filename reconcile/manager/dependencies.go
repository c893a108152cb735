package manager

import (
	"context"

	"github.com/converge-go/converge/reconcile/dependency"
)

// dependencies is the runnable that checks Options.Dependencies: named
// "dependencies", run on every replica (not only the leader), ready while
// every dependency is up. It is added after the HTTP server, before the
// caller's runnables.
type dependencies struct{ set *dependency.Set }

func (d dependencies) Name() string                  { return "dependencies" }
func (d dependencies) Run(ctx context.Context) error { return d.set.Run(ctx) }

// Ready returns nil while every dependency is up, else an error matching
// dependency.ErrDown that names each one down.
func (d dependencies) Ready() error { return d.set.Err() }

// Dependencies returns the state of each of Options.Dependencies, in their
// order (none without any): up or down, since when, the failures since its
// latest successful check, and the latest error.
func (m *Manager) Dependencies() []dependency.State {
	if m.deps == nil {
		return nil
	}
	return m.deps.States()
}
