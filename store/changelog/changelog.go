package changelog

import (
	"errors"
	"time"
)

// Errors of the package, besides the store package's. Test for them with
// errors.Is.
var (
	// ErrDamaged: a segment of the log is damaged: a record whose length
	// or checksum does not match, that does not decode, or that breaks
	// the log's order, or a segment missing between two others of one
	// epoch. Nothing after the damage is read: a restore to a point past
	// it fails.
	ErrDamaged = errors.New("changelog: damaged")
	// ErrTorn: the log's last segment ends in a record not whole on disk
	// (a crash while it was written). The log ends at the record before
	// it. An error matching ErrTorn matches ErrDamaged too.
	ErrTorn = errors.New("changelog: ends in a torn record")
	// ErrFormat: a segment names a format version this package does not
	// know (written by a newer one).
	ErrFormat = errors.New("changelog: unknown format version")
	// ErrGap: the point asked for is not covered by the log: before its
	// first record, past its last, or in a gap between two epochs, where
	// changes were not shipped.
	ErrGap = errors.New("changelog: the log does not cover the point")
	// ErrNoLog: the directory holds no segment of the store asked for.
	ErrNoLog = errors.New("changelog: no log")
)

// Op says what a record records.
type Op uint8

const (
	// Put: the key was created or updated; the record holds its new value.
	Put Op = iota + 1
	// Delete: the key was deleted.
	Delete
)

// String returns "put" or "delete".
func (o Op) String() string {
	switch o {
	case Put:
		return "put"
	case Delete:
		return "delete"
	}
	return "op(?)"
}

// Record is one change of the store, as the log holds it.
type Record struct {
	Op  Op
	Key string
	// Value is the key's new value's bytes (a store of T values: its
	// codec's); empty for Delete.
	Value []byte
	// Revision is the store revision of the change; several records may
	// share one (a transaction of several keys). CreateRevision is the
	// key's create revision after a Put; 0 for Delete.
	Revision, CreateRevision int64
	// Time is when the shipper received the change, by its process's
	// clock: what a restore to a time compares.
	Time time.Time
}

// Defaults of Options.
const (
	// DefaultSyncEvery is the longest a shipped change waits in memory
	// before it is synced to disk.
	DefaultSyncEvery = 100 * time.Millisecond
	// DefaultSyncBytes is how many unsynced bytes make a sync at once.
	DefaultSyncBytes = 1 << 20
	// DefaultSegmentSize is the size past which a segment is closed and
	// the next change starts a new one.
	DefaultSegmentSize = 64 << 20
)
