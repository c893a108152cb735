package reconciletest

import (
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/faultstore"
)

// Wrap returns a store/faultstore Store over inner, injecting the faults o
// describes, whose writes env counts in Counts.Writes. Invalid options
// fail the test. Everything else about the faults (outages, watch breaks,
// plans, lost responses) is faultstore's; Wrap only ties the store to env.
func Wrap[T any](env *Env, inner store.Store[T], o faultstore.Options) *faultstore.Store[T] {
	env.t.Helper()
	s, err := faultstore.New(inner, o)
	if err != nil {
		env.t.Fatalf("reconciletest.Wrap: %v", err)
		return nil
	}
	env.mu.Lock()
	env.stores = append(env.stores, s)
	env.mu.Unlock()
	return s
}
