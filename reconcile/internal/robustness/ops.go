package robustness

import (
	"errors"
	"fmt"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/faultstore"
)

// OpKind names a recorded store call.
type OpKind uint8

// The recorded calls.
const (
	OpGet OpKind = iota + 1
	OpCreate
	OpUpdate
	OpDelete
)

// String returns "Get", "Create", "Update" or "Delete".
func (k OpKind) String() string {
	switch k {
	case OpGet:
		return "Get"
	case OpCreate:
		return "Create"
	case OpUpdate:
		return "Update"
	case OpDelete:
		return "Delete"
	}
	return fmt.Sprintf("OpKind(%d)", uint8(k))
}

// IsWrite reports whether the call can change the store.
func (k OpKind) IsWrite() bool { return k == OpCreate || k == OpUpdate || k == OpDelete }

// Input is a recorded call: the operation, the key's index in the workload's
// key set, the value written (Create, Update) and the expected revision
// (Update, Delete).
type Input struct {
	Op    OpKind
	Key   int
	Value Value
	Rev   int64
}

// Result classifies what a call returned.
type Result uint8

// The results a call can have.
const (
	// ResultOK: the call succeeded.
	ResultOK Result = iota + 1
	// ResultNotFound, ResultExists, ResultConflict: the call failed its
	// precondition and wrote nothing.
	ResultNotFound
	ResultExists
	ResultConflict
	// ResultFailed: the call failed before reaching the store (or a read
	// failed): it had no effect.
	ResultFailed
	// ResultUnknown: a write whose outcome the client cannot know (its
	// response was lost). The operation never returns.
	ResultUnknown
	// ResultUnexpected: an error outside the store's contract for a valid
	// call. The model never accepts it.
	ResultUnexpected
)

// String returns the result's name.
func (r Result) String() string {
	switch r {
	case ResultOK:
		return "ok"
	case ResultNotFound:
		return "not found"
	case ResultExists:
		return "exists"
	case ResultConflict:
		return "conflict"
	case ResultFailed:
		return "failed"
	case ResultUnknown:
		return "unknown"
	case ResultUnexpected:
		return "unexpected error"
	}
	return fmt.Sprintf("Result(%d)", uint8(r))
}

// Output is what a call returned: its result and, on success, the value
// (Get, Create, Update), the revision (of the object, or of the delete) and
// the create revision (Get, Create, Update). Err holds the text of an
// unexpected error.
type Output struct {
	Result    Result
	Value     Value
	Rev       int64
	CreateRev int64
	Err       string
}

// classify maps a call's error to its Result. Writes that may have reached
// the store and failed with store.ErrUnavailable are ambiguous; reads that
// failed had no effect either way.
func classify(op OpKind, err error) Result {
	switch {
	case err == nil:
		return ResultOK
	case errors.Is(err, store.ErrNotFound):
		return ResultNotFound
	case errors.Is(err, store.ErrExists):
		return ResultExists
	case errors.Is(err, store.ErrConflict):
		return ResultConflict
	case errors.Is(err, faultstore.ErrNotSent):
		return ResultFailed
	case errors.Is(err, store.ErrUnavailable) && op.IsWrite():
		return ResultUnknown
	case errors.Is(err, store.ErrUnavailable):
		return ResultFailed
	}
	return ResultUnexpected
}
