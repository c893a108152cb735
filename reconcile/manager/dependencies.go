package manager

import (
	"context"
	"fmt"
	"slices"

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

// sharedDependency is a dependency of the manager or of a runnable, and
// who gave it first.
type sharedDependency struct {
	dep *dependency.Dependency
	by  string
}

// dependent is a runnable with dependencies of its own (a
// reconcile.Controller).
type dependent interface {
	DependsOn() []*dependency.Dependency
}

// dependsOn refuses, with ErrInvalid, a runnable named name whose
// dependencies include another *dependency.Dependency of the name of one
// the manager or another runnable has: two would check one system apart
// and see it down at different instants. It records the runnable's
// dependencies otherwise. m.mu is held.
func (m *Manager) dependsOn(name string, r Runnable) error {
	d, ok := r.(dependent)
	if !ok {
		return nil
	}
	deps := slices.DeleteFunc(d.DependsOn(), func(dep *dependency.Dependency) bool { return dep == nil })
	for _, dep := range deps {
		if had, ok := m.shared[dep.Name]; ok && had.dep != dep {
			return fmt.Errorf("%w: runnable %q depends on a dependency named %q other than the one of %s: "+
				"give the same *dependency.Dependency to every part of the process", ErrInvalid, name, dep.Name, had.by)
		}
	}
	m.shareDependencies(fmt.Sprintf("runnable %q", name), deps)
	return nil
}

// shareDependencies records deps as given by by, those not already known.
func (m *Manager) shareDependencies(by string, deps []*dependency.Dependency) {
	if m.shared == nil {
		m.shared = map[string]sharedDependency{}
	}
	for _, dep := range deps {
		if _, ok := m.shared[dep.Name]; !ok {
			m.shared[dep.Name] = sharedDependency{dep: dep, by: by}
		}
	}
}
