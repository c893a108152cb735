package robustness

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/converge-go/converge/store"
)

// Faults is a store.Store decorator that fails writes (Create, Update,
// Delete) at random. With probability before a write fails before it reaches
// the store: it returns an error matching store.ErrUnavailable and
// ErrNotSent and the store is not called. With probability after a write
// reaches the store and its response is then lost: it returns a
// *LostResponseError (matching store.ErrUnavailable) that keeps the store's
// real response. Reads, watches and other writes pass through. Faults is safe
// for concurrent use.
type Faults struct {
	s             store.Store[Value]
	before, after float64

	mu  sync.Mutex
	rng *rand.Rand
}

var _ store.Store[Value] = (*Faults)(nil)

// NewFaults wraps s. before and after are probabilities (0 to 1, summing to
// at most 1); anything else fails with ErrConfig. seed seeds the choice of
// faults.
func NewFaults(s store.Store[Value], seed uint64, before, after float64) (*Faults, error) {
	if err := checkProbabilities(before, after); err != nil {
		return nil, err
	}
	return &Faults{s: s, before: before, after: after, rng: rand.New(rand.NewPCG(seed, seed^0x5eed))}, nil
}

type fault uint8

const (
	noFault fault = iota
	failBefore
	failAfter
)

func (f *Faults) pick() fault {
	f.mu.Lock()
	p := f.rng.Float64()
	f.mu.Unlock()
	switch {
	case p < f.before:
		return failBefore
	case p < f.before+f.after:
		return failAfter
	}
	return noFault
}

var errNotSent = fmt.Errorf("%w: %w", store.ErrUnavailable, ErrNotSent)

// write runs do under a randomly chosen fault.
func (f *Faults) write(op OpKind, do func() (Output, error)) (Output, error) {
	switch f.pick() {
	case failBefore:
		return Output{}, errNotSent
	case failAfter:
		out, err := do()
		out.Result = classify(op, err)
		if err != nil {
			out = Output{Result: out.Result, Err: err.Error()}
		}
		return Output{}, &LostResponseError{Outcome: out}
	}
	return do()
}

// Create fails at random or calls through.
func (f *Faults) Create(ctx context.Context, key string, value Value, guards ...store.Guard) (store.Object[Value], error) {
	var obj store.Object[Value]
	_, err := f.write(OpCreate, func() (Output, error) {
		var err error
		obj, err = f.s.Create(ctx, key, value, guards...)
		return objectOutput(obj), err
	})
	if err != nil {
		return store.Object[Value]{}, err
	}
	return obj, nil
}

// Update fails at random or calls through.
func (f *Faults) Update(ctx context.Context, key string, value Value, revision int64, guards ...store.Guard) (store.Object[Value], error) {
	var obj store.Object[Value]
	_, err := f.write(OpUpdate, func() (Output, error) {
		var err error
		obj, err = f.s.Update(ctx, key, value, revision, guards...)
		return objectOutput(obj), err
	})
	if err != nil {
		return store.Object[Value]{}, err
	}
	return obj, nil
}

// Delete fails at random or calls through.
func (f *Faults) Delete(ctx context.Context, key string, revision int64, guards ...store.Guard) (int64, error) {
	out, err := f.write(OpDelete, func() (Output, error) {
		rev, err := f.s.Delete(ctx, key, revision, guards...)
		return Output{Rev: rev}, err
	})
	if err != nil {
		return 0, err
	}
	return out.Rev, nil
}

// Get passes through.
func (f *Faults) Get(ctx context.Context, key string) (store.Object[Value], error) {
	return f.s.Get(ctx, key)
}

// List passes through.
func (f *Faults) List(ctx context.Context, prefix string) ([]store.Object[Value], int64, error) {
	return f.s.List(ctx, prefix)
}

// Watch passes through.
func (f *Faults) Watch(ctx context.Context, prefix string, after int64) (store.Watcher[Value], error) {
	return f.s.Watch(ctx, prefix, after)
}

// Revision passes through.
func (f *Faults) Revision(ctx context.Context) (int64, error) {
	return f.s.Revision(ctx)
}

// checkProbabilities reports whether before and after are probabilities that
// sum to at most 1 (NaN is not).
func checkProbabilities(before, after float64) error {
	if !(before >= 0 && after >= 0 && before+after <= 1) {
		return fmt.Errorf("%w: fault probabilities %v before and %v after commit, want each at least 0 and at most 1 together", ErrConfig, before, after)
	}
	return nil
}
