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
// # Files
//
// Open creates the file with mode 0600. One Store at a time may hold a file:
// a second Open, in this process or another, fails with ErrLocked after the
// lock timeout. A file that is not a bbolt database, is damaged, or is a bbolt
// database written by something else is refused with ErrCorrupt or ErrFormat;
// it is never reset.
package boltstore
