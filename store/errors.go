package store

import (
	"errors"

	"github.com/converge-go/converge/internal/invalid"
)

// Errors returned by every Store. Test for them with errors.Is: backends wrap
// them with detail (the key, the revisions involved).
var (
	// ErrNotFound: the key does not exist.
	ErrNotFound = errors.New("store: not found")
	// ErrExists: Create on a key that already exists.
	ErrExists = errors.New("store: already exists")
	// ErrConflict: the object's revision is not the expected one; someone
	// wrote it since the caller read it.
	ErrConflict = errors.New("store: revision conflict")
	// ErrGuardFailed: a Guard on another key did not hold; nothing was written.
	ErrGuardFailed = errors.New("store: guard failed")
	// ErrCompacted: a watch asked to resume from a revision older than the
	// retained history. Re-list and watch from the list's revision.
	ErrCompacted = errors.New("store: revision compacted")
	// ErrLagging: a watcher fell too far behind the writers and was ended so
	// that writers never block. Resume from the last revision received.
	ErrLagging = errors.New("store: watcher fell behind")
	// ErrUnavailable: the backend cannot be reached or is closed. The write
	// may or may not have happened if it was returned by a write.
	ErrUnavailable = errors.New("store: unavailable")
	// ErrInvalid: bad input (empty, oversized or malformed key, nil value,
	// oversized encoded value). Nothing was written.
	// errors.Is matches it with the ErrInvalid of every converge package.
	ErrInvalid error = invalid.New("store")
	// ErrMutated: a value handed out by the in-memory store was changed in
	// place (reported only with WithMutationCheck).
	ErrMutated = errors.New("store: shared value was mutated")
)
