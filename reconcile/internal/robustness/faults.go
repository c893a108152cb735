package robustness

import (
	"context"
	"errors"
	"fmt"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/faultstore"
)

// Faults is the fault store the recorded clients write through (see
// NewFaults): a store/faultstore Store, whose outages a run switches
// (SetOutage), that also loses the answers of writes the store answered.
type Faults struct {
	*faultstore.Store[Value]
	// accepted and refused lose the answers of writes the store applied
	// and of writes it refused on their precondition.
	accepted, refused *Schedule
}

var _ store.Store[Value] = (*Faults)(nil)

// NewFaults wraps s in the fault store that the recorded clients write
// through. Faults fire at counts drawn from seed (see Schedule), never by
// chance in time, so how many a run sees does not depend on scheduling:
//
//   - one write in round(1/before), the first within that many, fails
//     before it reaches s, with an error matching store.ErrUnavailable and
//     faultstore.ErrNotSent (the model requires that it had no effect);
//   - one write in round(1/after) of those s applied, and as many of those
//     it refused on their precondition (exists, conflict, not found), each
//     the first within that many, reach s and lose their answer: the
//     caller gets a *faultstore.LostResponseError, matching
//     store.ErrUnavailable only, that keeps s's real answer. So a run
//     whose store applied and refused that many writes has ambiguous
//     writes that committed and some that did not, whatever the
//     scheduling.
//
// Reads and watches pass through, except during an outage (SetOutage:
// writes then fail before reaching the store and reads fail; watches end,
// or stay open and silent). before and after must be probabilities
// summing to at most 1, else ErrConfig.
func NewFaults(s store.Store[Value], seed uint64, before, after float64) (*Faults, error) {
	if err := checkProbabilities(before, after); err != nil {
		return nil, err
	}
	fail := ScheduleFor(before, seed, 1)
	fs, err := faultstore.New(s, faultstore.Options{Plan: func(c faultstore.Call) faultstore.Decision {
		if c.Op&faultstore.OpWrites != 0 && fail.Fires() {
			return faultstore.Decision{Fault: faultstore.Fail}
		}
		return faultstore.Decision{}
	}})
	if err != nil {
		return nil, err
	}
	return &Faults{Store: fs, accepted: ScheduleFor(after, seed, 2), refused: ScheduleFor(after, seed, 3)}, nil
}

// Create writes through the faults.
func (f *Faults) Create(ctx context.Context, key string, v Value, guards ...store.Guard) (store.Object[Value], error) {
	obj, err := f.Store.Create(ctx, key, v, guards...)
	obj, _, err = f.answer(faultstore.OpCreate, obj, 0, err)
	return obj, err
}

// Update writes through the faults.
func (f *Faults) Update(ctx context.Context, key string, v Value, rev int64, guards ...store.Guard) (store.Object[Value], error) {
	obj, err := f.Store.Update(ctx, key, v, rev, guards...)
	obj, _, err = f.answer(faultstore.OpUpdate, obj, 0, err)
	return obj, err
}

// Delete writes through the faults.
func (f *Faults) Delete(ctx context.Context, key string, rev int64, guards ...store.Guard) (int64, error) {
	r, err := f.Store.Delete(ctx, key, rev, guards...)
	_, r, err = f.answer(faultstore.OpDelete, store.Object[Value]{}, r, err)
	return r, err
}

// answer returns the store's answer to a write, or loses it if the
// schedule of its kind of answer fires: an answer the fault store made up
// (faultstore.ErrNotSent) or that is itself unknown goes through.
func (f *Faults) answer(op faultstore.Op, obj store.Object[Value], rev int64, err error) (store.Object[Value], int64, error) {
	var s *Schedule
	switch {
	case err == nil:
		s = f.accepted
	case errors.Is(err, faultstore.ErrNotSent):
	case errors.Is(err, store.ErrExists), errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrNotFound):
		s = f.refused
	}
	if !s.Fires() {
		return obj, rev, err
	}
	return store.Object[Value]{}, 0, &faultstore.LostResponseError[Value]{Op: op, Object: obj, Revision: rev, Err: err}
}

// lostOutcome is the outcome the store really gave a write whose response
// was lost, as the Recorder would have recorded it.
func lostOutcome(op OpKind, lost *faultstore.LostResponseError[Value]) Output {
	return answer(op, lost.Object, lost.Revision, lost.Err)
}

// answer is the Output a Recorder records for a write's answer: the object
// (Create, Update) or revision (Delete) it returned, or the result its
// error stands for, with the error's text.
func answer(op OpKind, obj store.Object[Value], rev int64, err error) Output {
	out := objectOutput(obj)
	if op == OpDelete {
		out = Output{Rev: rev}
	}
	out.Result = classify(op, err)
	if err != nil {
		out = Output{Result: out.Result, Err: err.Error()}
	}
	return out
}

// checkProbabilities reports whether before and after are probabilities that
// sum to at most 1 (NaN is not).
func checkProbabilities(before, after float64) error {
	if !(before >= 0 && after >= 0 && before+after <= 1) {
		return fmt.Errorf("%w: fault probabilities %v before and %v after commit, want each at least 0 and at most 1 together", ErrConfig, before, after)
	}
	return nil
}
