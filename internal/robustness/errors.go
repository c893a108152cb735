package robustness

import (
	"errors"
	"fmt"

	"github.com/converge-go/converge/store"
)

var (
	// ErrConfig: a Config or Backend is out of range or incomplete.
	ErrConfig = errors.New("robustness: invalid configuration")

	// ErrUnrecordedKey: a Recorder was asked about a key outside its
	// workload's key set. It also matches store.ErrInvalid.
	ErrUnrecordedKey = fmt.Errorf("%w: robustness: key outside the recorded set", store.ErrInvalid)

	// ErrNotSent: Faults failed a write before it reached the store. It is
	// returned wrapped together with store.ErrUnavailable.
	ErrNotSent = errors.New("robustness: write failed before reaching the store")

	// ErrWatch: the watch stream does not match the recorded history.
	ErrWatch = errors.New("robustness: watch stream does not match the history")

	// ErrCompaction: a store did not honour compaction as its contract says.
	ErrCompaction = errors.New("robustness: compaction contract broken")
)

// LostResponseError is returned by Faults for a write that reached the store
// but whose response was then discarded. It matches store.ErrUnavailable,
// and only that: the client must not learn the outcome. Outcome holds the
// response the store really gave, for validators that know what happened.
type LostResponseError struct {
	Outcome Output
}

func (e *LostResponseError) Error() string {
	return "store: unavailable: robustness: response lost after the write reached the store"
}

// Unwrap makes the error match store.ErrUnavailable.
func (e *LostResponseError) Unwrap() error { return store.ErrUnavailable }
