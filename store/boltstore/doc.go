// Package boltstore is a persistent store.Store kept in one bbolt file: the
// default backend for a single daemon that must survive restarts.
//
// # Durability
//
// A write is acknowledged (its method returns without error) only after the
// bbolt transaction that holds it has been committed and synced to disk, so
// every acknowledged write survives a crash or a kill of the process. The
// store-wide revision counter and a bounded history of recent revisions live
// in the same file and are written in the same transaction as the object, so
// after a restart revisions continue where they stopped and a watch can
// resume from a revision written before the restart. A write's context is
// checked before the write is submitted; once submitted, the write runs to
// its commit even if the context is cancelled meanwhile.
//
// # Shared commits
//
// Concurrent writers share commits (group commit): the writes that queue up
// while one transaction commits are applied together in the next, and
// synced once, so the batch grows with the number of writers and no write
// waits for a timer. A write whose condition fails (a revision conflict, a
// failed guard, an existing key) is reported to its own caller only; it
// neither fails nor repeats the other writes of the batch, and if a shared
// transaction fails as a whole, each of its writes is committed alone.
//
// # Watch
//
// Watchers are served in process: committed events fan out to them in
// revision order, only after the commit is on disk. A watch that starts
// behind the current revision reads the persisted history first and then
// switches to live events, without a gap or a duplicate. Each watcher has a
// bounded buffer of live events; one that falls further behind is ended with
// store.ErrLagging, so writers never block on a slow reader. History older
// than the retained window (WithHistory) is dropped, and a watch from before
// it fails with store.ErrCompacted.
//
// A write's cause (store.WithCause) is delivered with its revision's event
// while the Store that wrote it keeps it: in memory, for its latest 10,000
// revisions that had one (fewer with a shorter history); the file keeps no
// cause, so revisions written before Open are delivered with none.
//
// # Files
//
// Open creates the file with mode 0600, whole: it is written under a
// temporary name and linked into place, so a crash never leaves an empty or
// half-made store file. One Store at a time may hold a file: a second Open,
// in this process or another, fails with ErrLocked after the lock timeout.
//
// # Identity
//
// Every file holds the identity of its store (store.Identifier): 128
// random bits written in the transaction that creates the file, so that no
// file ever exists without one. It is the same after every reopen and for
// every process that opens the file; a new file, even at the same path, has
// a new one, so a controller tells a store whose objects were all deleted
// from a file that was replaced by a fresh one. A copy of the file is the
// same store, with the same identity: a file restored from a backup reads
// as the store it was copied from, with the revisions of the moment of the
// copy (revisions a client may have seen go past). A damaged identity fails
// Open with ErrCorrupt. A store restored from a snapshot (Restore) is
// another store: a new identity, and revisions above any the old one had.
//
// # Damage
//
// A damaged file is reported, never a panic, a crash or a silent reset.
// Before bbolt maps an existing file, Open verifies it, under the file's
// lock and reading it with plain reads: an empty file, a size that is not a
// whole number of pages, fewer pages than the meta page counts (a truncated
// file), a meta page that fails its checksum, and any fault in bbolt's page
// structure (page ids and types, elements inside their pages, key order,
// buckets, every page in use exactly once or free) fail with ErrCorrupt.
// Open then reads every record of the store: each carries a CRC-32C of its
// key and contents, so damage to a key, a value or a revision is reported
// as ErrCorrupt too, as is a history with a gap, an object that disagrees
// with it, a missing or damaged identity, a number of objects other than the store counts (an element
// dropped from a page), a damaged format marker, or a file without the
// store's buckets (Open creates files with them). The cost is one read of the whole file at each Open
// (for a file of a few hundred megabytes, about the time the disk takes to
// read it), paid so that damage is found before it is served. A file that
// is not a bbolt database or is damaged fails with ErrCorrupt; a bbolt
// database written by something else, or by an unknown version of this
// package, with ErrFormat. A refused file is left as it is.
//
// Damage that appears while the Store runs (the file changed or truncated
// behind its back) is met by reads: each bbolt transaction runs with
// panic-on-fault set and recovers bbolt's panics, so a read or a write that
// meets damage fails with an error matching ErrCorrupt (and
// store.ErrUnavailable) instead of ending the process.
//
// # Restore and recovery
//
// Restore makes a new store file from a snapshot (store/snapshot) of any
// store, by the rule of the store package's doc (# Snapshots and
// restores): a new identity, a revision the snapshot's plus a bump
// (WithRevisionBump, DefaultRevisionBump), everything before it
// compacted. The file appears whole or not at all, and only from a
// snapshot that checked; a snapshot holding a value the check of
// WithValueCheck refuses, or a revision whose bump would pass
// snapshot.MaxRevision, is refused naming the key or the revision
// (snapshot.ErrUnservable: TestARestoreRefusesAValueItsLayerCannotReadNamingTheKey,
// TestARestoreRefusesARevisionThatLeavesNoRoomNamingIt).
//
// OpenOrRecover opens a file and, if it is damaged, recovers it from a
// snapshot: from a directory (a snapshot.Saver keeps one), the good
// snapshot of the damaged store's identity with the highest revision,
// never by the clock and never another store's (the directory may be
// shared); or the snapshot file named, whatever its identity. The damaged
// file is moved aside, never deleted, the snapshot restored in its place,
// and Recovery says which snapshot, where the damaged file went and which
// revisions were lost, when the damaged file still tells its own. Without
// a snapshot of its store (or with its identity unreadable), unless one is
// named, the damaged file stays where it is
// (TestARecoveryChoosesTheDamagedStoresSnapshotByIdentityThenRevision).
//
// Files written in format 1 of this package (records without checksums)
// or format 2 (no identity) are converted to format 3 at Open, in one
// transaction: their records gain checksums, and the file an identity,
// made at that Open.
package boltstore
