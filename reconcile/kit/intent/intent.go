package intent

import (
	"context"
	"fmt"

	"github.com/converge-go/converge/internal/invalid"
	"github.com/converge-go/converge/internal/nilness"
	"github.com/converge-go/converge/store"
)

// ErrInvalid matches every error the package returns for bad input (a
// Once with a function missing, an object without a value, a world that
// answers with an unknown State); it matches the ErrInvalid of every
// converge package.
var ErrInvalid error = invalid.New("intent")

// Record is an object's intent record, kept in its status: the attempt in
// progress (pending: not Done), or the last one made. The zero Record: no
// attempt was ever recorded.
type Record[R any] struct {
	// ID names the attempt in the world (see ID): unique to the object's
	// incarnation, its generation and the attempt's number.
	ID string `json:"id,omitempty"`
	// Generation is the generation the attempt is for, Attempt its
	// number among the attempts of that generation (from 1).
	Generation int64 `json:"generation,omitempty"`
	Attempt    int   `json:"attempt,omitempty"`
	// Done: the attempt finished and Result is its result.
	Done   bool `json:"done,omitempty"`
	Result R    `json:"result,omitzero"`
}

// Pending reports whether rec names an attempt whose result is not
// recorded.
func (rec Record[R]) Pending() bool { return rec.ID != "" && !rec.Done }

// Found is what the world says of an attempt: its State, and its Result
// once Finished.
type Found[R any] struct {
	State  State
	Result R
}

// Once runs a side effect once per attempt for objects of type T, across
// crashes, with results of type R (see the package documentation). Record,
// Generation and Write say where the record lives (ForResource fills them
// for a resource.Resource); Find and Act are the world's. Every function
// but Again is required. A Once is a value: it is safe for concurrent use
// if its functions are.
type Once[T, R any] struct {
	// Record returns the intent record v holds (the zero Record for none).
	Record func(v T) Record[R]
	// Generation returns the generation v's spec is at: an attempt is made
	// for each generation (a new spec wants its side effect again).
	Generation func(v T) int64
	// Write stores rec in a copy of obj.Value (never in obj.Value itself)
	// and writes it to s with a compare-and-swap against obj.Revision,
	// returning the object as written. Pass Step the reconcile's
	// Request.Store, so that the write is fenced by the controller's term.
	Write func(ctx context.Context, s store.Store[T], obj store.Object[T], rec Record[R]) (store.Object[T], error)
	// Find says what became of attempt id in the world: Absent if it never
	// started, Running, or Finished with its result. The world must keep
	// an attempt's result (a result file, a row) until its record says
	// Done, so that a crash between acting and recording loses nothing.
	Find func(ctx context.Context, id string) (Found[R], error)
	// Act makes attempt id's side effect, carrying id into the world so
	// that Find finds it (a process's environment, a row's key, a file's
	// name), and returns what became of it: Finished with its result, or
	// Running if it goes on (Find judges it later). Acting twice under one
	// id must do it once (an exclusive claim file, a unique key): a
	// deposed leader may still be acting under it. An error leaves the
	// attempt pending: the next Step asks Find.
	Act func(ctx context.Context, id string) (Found[R], error)
	// Again reports whether another attempt of the same generation is
	// wanted after last, finished (a retry after a failure); nil: never.
	Again func(last Record[R]) bool
}

// Outcome is what a Step did.
type Outcome[T, R any] struct {
	// Object is the object as last written (or as given, if Step wrote
	// nothing), and Record its intent record.
	Object store.Object[T]
	Record Record[R]
	// Decisions are the decisions Step carried out, in order: [Done],
	// [Begin Act], [Act], [Adopt], [Judge], ...
	Decisions []Decision
	// Running: the attempt runs on (adopted, or started by Act): Step
	// again later (Result.RequeueAfter) to judge it.
	Running bool
	// Next: a result was recorded and another attempt is wanted (a newer
	// generation, or Again): Step again, at once (Result.Requeue) or after
	// a backoff of the caller's. Step makes at most one attempt finish per
	// call, so that the caller can pace retries.
	Next bool
}

// Settled reports whether the attempt of the object's generation has its
// result recorded and no other is wanted.
func (o Outcome[T, R]) Settled() bool { return !o.Running && !o.Next }

func (o *Once[T, R]) check(obj store.Object[T]) error {
	switch {
	case o.Record == nil || o.Generation == nil || o.Write == nil || o.Find == nil || o.Act == nil:
		return fmt.Errorf("%w: a Once without Record, Generation, Write, Find or Act", ErrInvalid)
	case nilness.Is(any(obj.Value)):
		return fmt.Errorf("%w: %q: no value", ErrInvalid, obj.Key)
	case obj.Revision < 1:
		return fmt.Errorf("%w: %q: revision %d: pass the object as read from the store", ErrInvalid, obj.Key, obj.Revision)
	}
	return nil
}
