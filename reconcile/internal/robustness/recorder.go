package robustness

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/faultstore"
)

// Op is one recorded call. Call and Return are nanoseconds since the
// history's start on the monotonic clock; an ambiguous write never returns
// (Return is math.MaxInt64). Actual is, for an ambiguous write whose lost
// response the fault store kept, what the store really returned; the linearizability
// check ignores it.
type Op struct {
	// ID is the call's id (CallID), unique in the history.
	ID     uint64
	Client int
	Input  Input
	Output Output
	Call   int64
	Return int64
	Actual *Output
	// Ended is, for an ambiguous write (whose Return is math.MaxInt64), a
	// time by which the write, if it happened, had happened: when the
	// client saw it fail, or, if later, when the store side recorded its
	// outcome (Outcomes).
	Ended int64
	// Known reports, for an ambiguous write, that Actual is what the
	// system under test itself answered, and only the transport between it
	// and the client lost the answer (a dropped HTTP connection): Resolve
	// replaces the write by that outcome before the check. An Actual kept
	// only by the fault injector (a faultstore.LostResponseError, which
	// models a store that does not know its own outcome) is not Known.
	Known bool
}

// History collects the operations of concurrent Recorders over one key set.
// It is safe for concurrent use.
type History struct {
	start time.Time
	keys  []string
	index map[string]int

	mu      sync.Mutex
	ops     []Op
	clients int
	calls   uint64
}

// NewHistory returns an empty history over keys (at most MaxKeys) whose
// clock starts now.
func NewHistory(keys []string) (*History, error) {
	if len(keys) == 0 || len(keys) > MaxKeys {
		return nil, fmt.Errorf("%w: %d keys, want 1 to %d", ErrConfig, len(keys), MaxKeys)
	}
	index := make(map[string]int, len(keys))
	for i, k := range keys {
		if err := store.ValidateKey(k); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		if _, dup := index[k]; dup {
			return nil, fmt.Errorf("%w: key %q given twice", ErrConfig, k)
		}
		index[k] = i
	}
	return &History{start: time.Now(), keys: slices.Clone(keys), index: index}, nil
}

// Ops returns a copy of the operations recorded so far.
func (h *History) Ops() []Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.ops)
}

// Keys returns the history's key set; Input.Key indexes it.
func (h *History) Keys() []string { return slices.Clone(h.keys) }

func (h *History) now() int64 { return int64(time.Since(h.start)) }

func (h *History) newClient() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.clients++
	return h.clients - 1
}

// nextCall returns a new call id, never 0.
func (h *History) nextCall() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls++
	return h.calls
}

func (h *History) add(op Op) {
	h.mu.Lock()
	h.ops = append(h.ops, op)
	h.mu.Unlock()
}

// Recorder is a store.Store decorator that records every Get, Create, Update
// and Delete in a History, with the time of the call and of the return. One
// Recorder is one sequential client: it must not be used concurrently. After
// an ambiguous write the Recorder continues under a new client id, since the
// pending write overlaps whatever the client does next. List, Watch and
// Revision pass through unrecorded. Calls on keys outside the history's key
// set fail with ErrUnrecordedKey and are not passed on.
type Recorder struct {
	h      *History
	s      store.Store[Value]
	client int
}

var _ store.Store[Value] = (*Recorder)(nil)

// Client returns a Recorder of s under a new client id.
func (h *History) Client(s store.Store[Value]) *Recorder {
	return &Recorder{h: h, s: s, client: h.newClient()}
}

// ClientID returns the client id the next operation is recorded under.
func (r *Recorder) ClientID() int { return r.client }

// call runs f with a context carrying a new call id (see CallID), timing
// it, and records it with the output that f builds from its object.
func (r *Recorder) call(ctx context.Context, in Input, f func(context.Context) (Output, error)) error {
	id := r.h.nextCall()
	ctx = WithCallID(ctx, id)
	call := r.h.now()
	out, err := f(ctx)
	ret := r.h.now()
	res := classify(in.Op, err)
	op := Op{ID: id, Client: r.client, Input: in, Call: call, Return: ret}
	switch res {
	case ResultOK:
		op.Output = out
		op.Output.Result = ResultOK
	case ResultUnknown:
		op.Output = Output{Result: ResultUnknown}
		op.Return = math.MaxInt64
		op.Ended = ret
		if lost, ok := errors.AsType[*faultstore.LostResponseError[Value]](err); ok {
			actual := lostOutcome(in.Op, lost)
			op.Actual = &actual
		}
	case ResultUnexpected:
		op.Output = Output{Result: res, Err: err.Error()}
	default:
		op.Output = Output{Result: res}
	}
	r.h.add(op)
	if res == ResultUnknown {
		r.client = r.h.newClient()
	}
	return err
}

func (r *Recorder) key(key string) (int, error) {
	i, ok := r.h.index[key]
	if !ok {
		return 0, fmt.Errorf("%w: %q", ErrUnrecordedKey, key)
	}
	return i, nil
}

// Get records and performs s.Get.
func (r *Recorder) Get(ctx context.Context, key string) (store.Object[Value], error) {
	i, err := r.key(key)
	if err != nil {
		return store.Object[Value]{}, err
	}
	var obj store.Object[Value]
	err = r.call(ctx, Input{Op: OpGet, Key: i}, func(ctx context.Context) (Output, error) {
		var err error
		obj, err = r.s.Get(ctx, key)
		return objectOutput(obj), err
	})
	return obj, err
}

// Create records and performs s.Create.
func (r *Recorder) Create(ctx context.Context, key string, value Value, guards ...store.Guard) (store.Object[Value], error) {
	i, err := r.key(key)
	if err != nil {
		return store.Object[Value]{}, err
	}
	var obj store.Object[Value]
	err = r.call(ctx, Input{Op: OpCreate, Key: i, Value: value}, func(ctx context.Context) (Output, error) {
		var err error
		obj, err = r.s.Create(ctx, key, value, guards...)
		return objectOutput(obj), err
	})
	return obj, err
}

// Update records and performs s.Update.
func (r *Recorder) Update(ctx context.Context, key string, value Value, revision int64, guards ...store.Guard) (store.Object[Value], error) {
	i, err := r.key(key)
	if err != nil {
		return store.Object[Value]{}, err
	}
	var obj store.Object[Value]
	err = r.call(ctx, Input{Op: OpUpdate, Key: i, Value: value, Rev: revision}, func(ctx context.Context) (Output, error) {
		var err error
		obj, err = r.s.Update(ctx, key, value, revision, guards...)
		return objectOutput(obj), err
	})
	return obj, err
}

// Delete records and performs s.Delete.
func (r *Recorder) Delete(ctx context.Context, key string, revision int64, guards ...store.Guard) (int64, error) {
	i, err := r.key(key)
	if err != nil {
		return 0, err
	}
	var rev int64
	err = r.call(ctx, Input{Op: OpDelete, Key: i, Rev: revision}, func(ctx context.Context) (Output, error) {
		var err error
		rev, err = r.s.Delete(ctx, key, revision, guards...)
		return Output{Rev: rev}, err
	})
	return rev, err
}

// List passes through unrecorded.
func (r *Recorder) List(ctx context.Context, prefix string) ([]store.Object[Value], int64, error) {
	return r.s.List(ctx, prefix)
}

// Watch passes through unrecorded.
func (r *Recorder) Watch(ctx context.Context, prefix string, after int64) (store.Watcher[Value], error) {
	return r.s.Watch(ctx, prefix, after)
}

// Revision passes through unrecorded.
func (r *Recorder) Revision(ctx context.Context) (int64, error) {
	return r.s.Revision(ctx)
}

func objectOutput(obj store.Object[Value]) Output {
	return Output{Value: obj.Value, Rev: obj.Revision, CreateRev: obj.CreateRevision}
}
