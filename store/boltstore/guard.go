package boltstore

import (
	"fmt"
	"runtime/debug"

	bolt "go.etcd.io/bbolt"
)

// guarded runs fn, which reads or writes the memory-mapped file through
// bbolt, and reports a panic as an error matching ErrCorrupt. bbolt trusts
// the file: damage that Open's verification could not see (a file changed
// behind the Store's back) makes it panic or fault on the mapped memory.
// Panic-on-fault is on while fn runs, so that a fault becomes a panic this
// recovers instead of a crash of the process.
func guarded(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: bbolt: %v", ErrCorrupt, p)
		}
	}()
	return fn()
}

// view runs fn in a guarded read transaction.
func view(db *bolt.DB, fn func(*bolt.Tx) error) error {
	return guarded(func() error { return db.View(fn) })
}

// update runs fn in a guarded read-write transaction.
func update(db *bolt.DB, fn func(*bolt.Tx) error) error {
	return guarded(func() error { return db.Update(fn) })
}
