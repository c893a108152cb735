package robustness

import (
	"context"
	"errors"
	"sync"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/faultstore"
)

// callIDKey is the context key of a recorded call's id.
type callIDKey struct{}

// WithCallID returns ctx carrying the id of a recorded call. A Recorder
// gives every call a new id (never 0); a transport between the client and
// the store (such as HTTP, in a header) carries it across, so that the
// store side can name the call in Outcomes.
func WithCallID(ctx context.Context, id uint64) context.Context {
	return context.WithValue(ctx, callIDKey{}, id)
}

// CallID returns the id of the recorded call ctx belongs to, and false if
// it carries none.
func CallID(ctx context.Context) (uint64, bool) {
	id, ok := ctx.Value(callIDKey{}).(uint64)
	return id, ok && id != 0
}

// Outcomes keeps, by call id, what the store side really answered to
// recorded writes, for backends whose transport can lose an answer on its
// way back to the client (a store served over HTTP whose connections
// drop). After the run, Record gives every ambiguous write it knows about
// its real outcome (Op.Actual), so that ValidateWatch knows whether the
// write must appear in the watch or must not, and marks it Op.Known when
// the store side knew that outcome itself, so that Resolve can replace the
// write by it before the linearizability check. A write Outcomes knows
// nothing about stays ambiguous both ways. Outcomes is safe for concurrent
// use; a nil *Outcomes knows nothing.
type Outcomes struct {
	now func() int64
	mu  sync.Mutex
	m   map[uint64]answered
}

// answered is what became of one call: its answer, whether the store side
// knew it (see Op.Known), and when it was recorded on the history's clock.
type answered struct {
	out   Output
	known bool
	at    int64
}

// NewOutcomes returns an empty Outcomes whose records are timed by now
// (History's clock, in Record; nil: untimed).
func NewOutcomes(now func() int64) *Outcomes {
	if now == nil {
		now = func() int64 { return 0 }
	}
	return &Outcomes{now: now, m: make(map[uint64]answered)}
}

// NotApplied records that the call id never reached the store (its
// connection was cut before the request was handled).
func (o *Outcomes) NotApplied(id uint64) { o.set(id, Output{Result: ResultFailed}, true) }

func (o *Outcomes) set(id uint64, out Output, known bool) {
	at := o.now()
	o.mu.Lock()
	o.m[id] = answered{out: out, known: known, at: at}
	o.mu.Unlock()
}

// fill gives every ambiguous write in ops whose outcome o knows and the
// Recorder did not its Actual and Known, and moves its Ended to when the
// outcome was recorded if that is later: a handler can still be applying a
// write when its client sees the connection close.
func (o *Outcomes) fill(ops []Op) {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := range ops {
		op := &ops[i]
		if op.Output.Result != ResultUnknown || op.Actual != nil {
			continue
		}
		if oc, ok := o.m[op.ID]; ok {
			out := oc.out
			op.Actual, op.Known = &out, oc.known
			op.Ended = max(op.Ended, oc.at)
		}
	}
}

// Store returns s decorated so that every Create, Update and Delete whose
// context carries a call id (CallID) records the answer s gave, as a
// Recorder would have recorded it: a write that s failed before it reached
// its own store (faultstore.ErrNotSent) as failed (known), a
// faultstore.LostResponseError as the answer the fault store kept (not
// known: the store side itself saw store.ErrUnavailable), and an answer
// that is itself unknown (store.ErrUnavailable, or an error outside the
// store's contract such as a cancelled context) not at all.
func (o *Outcomes) Store(s store.Store[Value]) store.Store[Value] {
	return &outcomeStore{Store: s, o: o}
}

type outcomeStore struct {
	store.Store[Value]
	o *Outcomes
}

func (s *outcomeStore) record(ctx context.Context, op OpKind, obj store.Object[Value], rev int64, err error) {
	id, ok := CallID(ctx)
	if !ok {
		return
	}
	if lost, isLost := errors.AsType[*faultstore.LostResponseError[Value]](err); isLost {
		s.o.set(id, lostOutcome(op, lost), false)
		return
	}
	out := answer(op, obj, rev, err)
	if out.Result != ResultUnknown && out.Result != ResultUnexpected {
		s.o.set(id, out, true)
	}
}

func (s *outcomeStore) Create(ctx context.Context, key string, value Value, guards ...store.Guard) (store.Object[Value], error) {
	obj, err := s.Store.Create(ctx, key, value, guards...)
	s.record(ctx, OpCreate, obj, 0, err)
	return obj, err
}

func (s *outcomeStore) Update(ctx context.Context, key string, value Value, revision int64, guards ...store.Guard) (store.Object[Value], error) {
	obj, err := s.Store.Update(ctx, key, value, revision, guards...)
	s.record(ctx, OpUpdate, obj, 0, err)
	return obj, err
}

func (s *outcomeStore) Delete(ctx context.Context, key string, revision int64, guards ...store.Guard) (int64, error) {
	rev, err := s.Store.Delete(ctx, key, revision, guards...)
	s.record(ctx, OpDelete, store.Object[Value]{}, rev, err)
	return rev, err
}

// Compact forwards to s's Compact, if it has one.
func (s *outcomeStore) Compact(ctx context.Context, rev int64) error {
	return compactOrUnsupported(ctx, s.Store, rev)
}
