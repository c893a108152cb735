// Package changelog ships the changes of any store.Store (memory, bbolt,
// etcd, a served store's client) to a log in another directory, beside
// its snapshots (store/snapshot), so that the store can be restored to
// its last shipped revision, or to a named earlier revision or time, and
// not only to its last snapshot. A restore goes through the backends'
// own (boltstore.Restore, etcdstore.Restore), by the rule of the store
// package's doc (# Snapshots and restores): a new identity, above every
// old revision.
//
// A Shipper watches its store and writes each change (put or delete, key,
// value bytes, revision, the time it was received) to the log, syncing
// in groups: at most Options.SyncEvery after a change, at once past
// Options.SyncBytes. It acknowledges nothing: a writer's write is done
// when its store says so, and what a lost disk takes with it is the
// changes not yet synced to the log's. Archive.State reads a snapshot and
// the log and returns the state at a Target in the snapshot format, which
// a backend's Restore reads as any snapshot.
//
// # Format and epochs
//
// The log is a directory of segments, "changes-REVISION-TAG.log": the
// lowest revision a segment may hold (20 digits), and a tag of its
// store's identity, so that several stores may share a directory (a store
// restored goes on shipping into the same one under its new identity). A
// segment is frames: a length (4 bytes), a CRC-32C of the payload (4
// bytes), the payload. The first frame is a JSON header: the format's
// name and version, the store's identity, the epoch's base revision and
// the revision of the last record before the segment; each other frame is
// one record. A segment is closed once it passes Options.SegmentSize, at a
// revision's end, and the next one begins.
//
// An epoch is a run of the log shipped from one watch, resumed after each
// break from the last revision shipped: it holds every change after its
// base. Each epoch begins with a snapshot of the store at its base,
// saved by the Shipper into Options.SnapshotDir. The rule: when the store
// can no longer deliver the changes after the log's last revision (the
// watch fails with store.ErrCompacted: a gap), or the log cannot be gone
// on with (damage), a new epoch begins with a new snapshot, and a point
// of an epoch is restored only from a snapshot at or above the revision
// where the epoch's log starts: never from an older snapshot across the
// gap, whose changes were never shipped. A point in a gap is ErrGap.
//
// Retention: when an epoch begins and when a segment is closed, the
// Shipper removes the segments whose every record is at or below the
// revision of the store's oldest snapshot in SnapshotDir (those the
// snapshots' own retention, snapshot.Saver's Keep, leaves), so that every
// point from the oldest snapshot on stays restorable.
//
// # Guarantees
//
// Each is proven by the test named after it:
//
//   - A restore to a revision holds exactly the state the store had at
//     that revision, for every revision of the log from a snapshot on
//     (TestARestoreToARevisionHoldsExactlyTheStateAtThatRevision, random
//     changes on the memory store against a model;
//     TestAShipperOfAServedStoreRestoresEveryRevision, the Shipper a
//     client of a store served over HTTP); to a time, the state
//     of the last revision received at or before it
//     (TestARestoreToATimeHoldsTheRevisionsReceivedByThen).
//   - A change synced before the store's disk is lost is restored:
//     a write acknowledged more than SyncEvery before is present
//     (TestAWriteAcknowledgedBeforeTheDiskWasLostIsRestored in
//     store/boltstore, store/etcdstore and store/cmd/convergestore, the
//     served store killed with SIGKILL).
//   - A gap in the store's history begins a new epoch with a snapshot,
//     and no point of it is restored from a snapshot before the gap
//     (TestAGapBeginsAnEpochThatRestoresOnlyFromItsOwnSnapshots).
//   - Retention never removes a segment a point from the oldest snapshot
//     on needs (TestRetentionKeepsEveryPointFromTheOldestSnapshotOn, a
//     property test over random logs and snapshots).
//   - A torn or damaged record is an error matching ErrTorn or
//     ErrDamaged, never skipped past: the records before it are read,
//     none after it in its epoch, and a restore past it fails
//     (TestATornOrDamagedRecordIsDetectedAndNeverSkippedPast); a Shipper
//     that resumes a log ending in a torn record cuts it there and goes
//     on (TestAShipperResumesItsLogAfterARestartAndCutsATornTail).
//   - A log directory group or others may change is refused
//     (internal/privatefile's rule: a restore would read what another
//     user planted), unless Options.InsecurePermissions accepts it
//     (TestAShipperRefusesALogDirectoryOthersMayChange); bad input is
//     store.ErrInvalid and changes nothing
//     (TestBadInputIsErrInvalidAndChangesNothing).
//
// Errors match ErrDamaged, ErrTorn, ErrFormat, ErrGap, ErrNoLog,
// ErrAlreadyRunning, snapshot.ErrNoSnapshot, store.ErrInvalid (bad input),
// or the store's and the file system's own errors, under errors.Is.
package changelog
