package robustness

import (
	"fmt"
	"math/rand/v2"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/faultstore"
)

// NewFaults wraps s in the store/faultstore Store that the recorded
// clients write through: with probability before a write fails before it
// reaches the store (an error matching store.ErrUnavailable and
// faultstore.ErrNotSent, so the model requires that it had no effect);
// with probability after it reaches the store and its response is lost (a
// *faultstore.LostResponseError, matching store.ErrUnavailable only, that
// keeps the store's real answer). Reads and watches pass through, except
// during an outage (SetOutage: writes then fail before reaching the store
// and reads fail; watches end, or stay open and silent). before and after
// must be probabilities summing to at most 1, else ErrConfig; seed seeds
// the choice of faults.
func NewFaults(s store.Store[Value], seed uint64, before, after float64) (*faultstore.Store[Value], error) {
	if err := checkProbabilities(before, after); err != nil {
		return nil, err
	}
	return faultstore.New(s, faultstore.Options{
		Rand:  rand.New(rand.NewPCG(seed, seed^0x5eed)),
		Rates: faultstore.Rates{Ops: faultstore.OpWrites, Error: before, Lost: after},
	})
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
