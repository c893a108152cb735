package boltstore

import "errors"

// Errors returned by Open, besides the store package's errors. Test for them
// with errors.Is.
var (
	// ErrLocked: another Store, in this process or another one, holds the
	// file, and it was not released within the lock timeout.
	ErrLocked = errors.New("boltstore: file is locked by another store")
	// ErrCorrupt: the file is not a bbolt database or is damaged. It is left
	// as it is.
	ErrCorrupt = errors.New("boltstore: file is damaged or not a bbolt database")
	// ErrFormat: the file is a bbolt database but not one written by this
	// package (no format marker), or one written in a format version this
	// package does not know. It is left as it is.
	ErrFormat = errors.New("boltstore: file is not in the boltstore format")
)
