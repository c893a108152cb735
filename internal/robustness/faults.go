package robustness

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/converge-go/converge/reconcile/reconciletest"
	"github.com/converge-go/converge/store"
)

// Faults is a store.Store decorator that fails writes (Create, Update,
// Delete) at random. With probability before a write fails before it reaches
// the store: it returns an error matching store.ErrUnavailable and
// ErrNotSent and the store is not called. With probability after a write
// reaches the store and its response is then lost: it returns a
// *LostResponseError (matching store.ErrUnavailable) that keeps the store's
// real response. Reads, watches and other writes pass through, except
// during an outage (SetOutage). Faults is safe for concurrent use.
type Faults struct {
	s             store.Store[Value]
	before, after float64
	// gate models outages: calls go through it while one lasts, watches
	// always (so that a silent outage can hold them back).
	gate *reconciletest.Store[Value]

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
	return &Faults{s: s, before: before, after: after, gate: reconciletest.NewStore(s, reconciletest.Faults{}),
		rng: rand.New(rand.NewPCG(seed, seed^0x5eed))}, nil
}

// SetOutage starts an outage of kind o, or ends the current one with
// reconciletest.Up. While it lasts, writes fail before reaching the store
// (ErrNotSent, so the model requires that they had no effect) and reads
// fail with store.ErrUnavailable; with reconciletest.SilentHang they hang
// until their context ends, or go ahead when the outage ends. Watches
// opened through f end (Loud) or stay open and silent, answering no
// progress request, then deliver what they held back (Silent,
// SilentHang); see reconciletest.Outage.
func (f *Faults) SetOutage(o reconciletest.Outage) { f.gate.SetOutage(o) }

// pass returns nil if a call may go ahead: at once without an outage, else
// once the gate lets it (SilentHang) or never (the gate's error).
func (f *Faults) pass(ctx context.Context) error {
	if f.gate.Outage() == reconciletest.Up {
		return nil
	}
	_, err := f.gate.Revision(ctx)
	return err
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

// write runs do under a randomly chosen fault, or fails it before it
// reaches the store during an outage.
func (f *Faults) write(ctx context.Context, op OpKind, do func() (Output, error)) (Output, error) {
	if err := f.pass(ctx); err != nil {
		return Output{}, fmt.Errorf("%w: %w", errNotSent, err)
	}
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
	_, err := f.write(ctx, OpCreate, func() (Output, error) {
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
	_, err := f.write(ctx, OpUpdate, func() (Output, error) {
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
	out, err := f.write(ctx, OpDelete, func() (Output, error) {
		rev, err := f.s.Delete(ctx, key, revision, guards...)
		return Output{Rev: rev}, err
	})
	if err != nil {
		return 0, err
	}
	return out.Rev, nil
}

// Get passes through, unless an outage fails it.
func (f *Faults) Get(ctx context.Context, key string) (store.Object[Value], error) {
	if err := f.pass(ctx); err != nil {
		return store.Object[Value]{}, err
	}
	return f.s.Get(ctx, key)
}

// List passes through, unless an outage fails it.
func (f *Faults) List(ctx context.Context, prefix string) ([]store.Object[Value], int64, error) {
	if err := f.pass(ctx); err != nil {
		return nil, 0, err
	}
	return f.s.List(ctx, prefix)
}

// Watch passes through, unless an outage fails it; an outage that starts
// later ends the watch (Loud) or holds it back (Silent, SilentHang).
func (f *Faults) Watch(ctx context.Context, prefix string, after int64) (store.Watcher[Value], error) {
	return f.gate.Watch(ctx, prefix, after)
}

// Revision passes through, unless an outage fails it.
func (f *Faults) Revision(ctx context.Context) (int64, error) {
	if err := f.pass(ctx); err != nil {
		return 0, err
	}
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
