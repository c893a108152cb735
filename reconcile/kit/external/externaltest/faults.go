package externaltest

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/converge-go/converge/reconcile/kit/external"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// ErrCrash is the error of a step Faults crashed: the process is taken
// to die there (before the step's effect, or after it and before its
// answer). Drive a fresh reconciler afterwards, as a restarted process.
var ErrCrash = errors.New("externaltest: crash")

// Step is one call to the world or one write to the store.
type Step struct {
	// N numbers the steps from 1, in the order they were made.
	N int
	// Op names it: "observe", "create", "update", "delete", "list",
	// "unmark", or "store create", "store update", "store status",
	// "store delete".
	Op string
}

func (s Step) String() string { return fmt.Sprintf("%d:%s", s.N, s.Op) }

// Faults counts the steps made through the wrappers it made (World,
// Store) and crashes one of them: the At-th, before its effect, or after
// it if After. The zero Faults counts and crashes nothing. A Faults is
// safe for concurrent use.
type Faults struct {
	// At is the step to crash (from 1; 0: none), After whether after its
	// effect.
	At    int
	After bool

	mu      sync.Mutex
	steps   []Step
	crashed bool
}

// Steps returns the steps made so far.
func (f *Faults) Steps() []Step {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Step(nil), f.steps...)
}

// Crashed reports whether the crash happened.
func (f *Faults) Crashed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.crashed
}

// begin counts a step and reports whether it crashes before its effect;
// end, after it, whether it crashes then.
func (f *Faults) begin(op string) (n int, crash bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n = len(f.steps) + 1
	f.steps = append(f.steps, Step{N: n, Op: op})
	if n == f.At && !f.After {
		f.crashed = true
		return n, true
	}
	return n, false
}

func (f *Faults) end(n int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n == f.At && f.After {
		f.crashed = true
		return true
	}
	return false
}

// do runs call as step op.
func do[R any](f *Faults, op string, call func() (R, error)) (R, error) {
	var zero R
	n, crash := f.begin(op)
	if crash {
		return zero, fmt.Errorf("%w before %s", ErrCrash, op)
	}
	r, err := call()
	if f.end(n) {
		return zero, fmt.Errorf("%w after %s", ErrCrash, op)
	}
	return r, err
}

// Do runs call as step op of f: a World's inner step (the mark a create
// stores apart from the object), crashed as WithFaults' steps are.
func (f *Faults) Do(op string, call func() error) error {
	_, err := do(f, op, func() (struct{}, error) { return struct{}{}, call() })
	return err
}

// WithFaults returns w with each call a step of f.
func WithFaults[Spec, Status any](f *Faults, w external.World[Spec, Status]) external.World[Spec, Status] {
	type d = external.Desired[Spec]
	out := w
	out.Observe = func(ctx context.Context, x d) (external.Observation[Status], error) {
		return do(f, "observe", func() (external.Observation[Status], error) { return w.Observe(ctx, x) })
	}
	out.Create = func(ctx context.Context, x d) (string, error) {
		return do(f, "create", func() (string, error) { return w.Create(ctx, x) })
	}
	out.Update = func(ctx context.Context, x d, o external.Observation[Status]) error {
		_, err := do(f, "update", func() (struct{}, error) { return struct{}{}, w.Update(ctx, x, o) })
		return err
	}
	out.Delete = func(ctx context.Context, x d) error {
		_, err := do(f, "delete", func() (struct{}, error) { return struct{}{}, w.Delete(ctx, x) })
		return err
	}
	if w.List != nil {
		out.List = func(ctx context.Context) ([]external.Listed, error) {
			return do(f, "list", func() ([]external.Listed, error) { return w.List(ctx) })
		}
	}
	if w.Unmark != nil {
		out.Unmark = func(ctx context.Context, x d) error {
			_, err := do(f, "unmark", func() (struct{}, error) { return struct{}{}, w.Unmark(ctx, x) })
			return err
		}
	}
	return out
}

// Store is a store whose writes are steps of Faults; reads pass. It keeps
// the identity and status writes of the store it wraps.
type Store[T any] struct {
	store.Store[T]
	F *Faults
}

var _ apistore.StatusWriter[int] = Store[int]{}

// Create is a step "store create".
func (s Store[T]) Create(ctx context.Context, key string, v T, guards ...store.Guard) (store.Object[T], error) {
	return do(s.F, "store create", func() (store.Object[T], error) { return s.Store.Create(ctx, key, v, guards...) })
}

// Update is a step "store update".
func (s Store[T]) Update(ctx context.Context, key string, v T, rev int64, guards ...store.Guard) (store.Object[T], error) {
	return do(s.F, "store update", func() (store.Object[T], error) { return s.Store.Update(ctx, key, v, rev, guards...) })
}

// UpdateStatus is a step "store status": the wrapped store's status write
// if it has one, else errors.ErrUnsupported.
func (s Store[T]) UpdateStatus(ctx context.Context, key string, v T, rev int64, guards ...store.Guard) (store.Object[T], error) {
	sw, ok := s.Store.(apistore.StatusWriter[T])
	if !ok {
		return store.Object[T]{}, errors.ErrUnsupported
	}
	return do(s.F, "store status", func() (store.Object[T], error) { return sw.UpdateStatus(ctx, key, v, rev, guards...) })
}

// Delete is a step "store delete".
func (s Store[T]) Delete(ctx context.Context, key string, rev int64, guards ...store.Guard) (int64, error) {
	return do(s.F, "store delete", func() (int64, error) { return s.Store.Delete(ctx, key, rev, guards...) })
}

// Identity is the wrapped store's (store.Identifier).
func (s Store[T]) Identity(ctx context.Context) (string, error) {
	id, ok := s.Store.(store.Identifier)
	if !ok {
		return "", errors.ErrUnsupported
	}
	return id.Identity(ctx)
}
