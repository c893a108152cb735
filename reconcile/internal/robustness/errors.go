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

	// ErrWatch: the watch stream does not match the recorded history.
	ErrWatch = errors.New("robustness: watch stream does not match the history")

	// ErrCompaction: a store did not honour compaction as its contract says.
	ErrCompaction = errors.New("robustness: compaction contract broken")
)
