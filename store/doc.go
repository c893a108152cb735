// Package store defines Store, the versioned key-value contract that the
// reconciliation loop treats as its source of truth, with an in-memory
// implementation, the error values every backend returns, and helpers for the
// read-modify-write loop.
//
// # Revisions
//
// Every successful write (create, update, delete) takes the next value of one
// store-wide counter that only grows. An object's Revision is the revision of
// its last write and its CreateRevision the revision of the write that created
// it. Revisions start at 1; 0 means "no revision" (an object that does not
// exist). A watch resumes "after revision R" and a List reports the revision
// its snapshot reflects, so list-then-watch never loses or repeats a change.
//
// # Conditional writes
//
// Update and Delete take the revision the caller last saw; if the object has
// been written since, they fail with ErrConflict and write nothing. A write may
// also carry Guards on other keys (for example a lease record), checked
// atomically with the write; a failed guard returns ErrGuardFailed.
//
// # Identity
//
// A store that implements Identifier has an identity made with it and kept
// for its whole life: the in-memory store one made by NewMemory, a bbolt
// file one written when the file is created, an etcd store one made of the
// cluster's ID, its key prefix and a record under that prefix. A client
// that remembers the identity of the store it synced with tells a store
// emptied by deletes (same identity) from another, fresh store (another
// identity): the guard any prune of the world needs. Each backend's tests
// check that its identity is not empty, stays the same across calls (and
// reopens or restarts, for a persistent backend) and differs between stores
// made separately. An identity does not tell copies apart: two processes over one bbolt file see one identity,
// and a copy of the file is the same store, with the revisions of the
// moment it was copied (see Identifier and each backend).
//
// # Snapshots and restores
//
// store/snapshot saves a snapshot of any store: one List of everything,
// with the revision it reflects and the store's identity. store/boltstore
// and store/etcdstore restore one into a new store (their Restore), by one
// rule. Objects keep their keys and values, not their revisions, and:
//
//   - a restored store has a new identity, never the snapshot's, so a
//     controller that compares identities knows it is another store and
//     judges its desired set afresh (a prune does not delete the world
//     because the restore lost a few objects);
//   - no revision from before the restore can be resumed from: a watch
//     after one fails with ErrCompacted and the client re-lists, instead
//     of waiting for a revision that would not mean what it meant. On
//     bbolt the restored store's revision is the snapshot's plus a bump (a
//     billion by default, boltstore.WithRevisionBump, as etcd's own restore
//     has --bump-revision), each object carries it, every revision up to it
//     is compacted, and writes go on above it: a client that saw the lost
//     store go past the snapshot (by less than the bump) is compacted too.
//     On etcd the revisions are the cluster's: the restore's writes take
//     its next revisions and the cluster is compacted up to the last of
//     them; a client whose old revision lies beyond the cluster's (a
//     snapshot of another store) is told by the identity alone.
//
// store/changelog ships a store's changes, between its snapshots, to a
// log from which the state at any revision or time it covers is read as
// a snapshot: a restore from it follows the same rule.
//
// A restore refuses, writing nothing, a snapshot holding what the store
// could not serve (snapshot.ErrUnservable, naming the key or revision): a
// value the layer or codec that will serve the store cannot decode (the
// restore's value check), or on bbolt a revision whose bump would pass
// snapshot.MaxRevision. Snapshots are chosen by identity, then revision,
// never by the clock: a recovery restores the damaged store's own
// snapshot, and another store's only when named by its file.
//
// # Guarantees
//
// Every backend (the in-memory store here, store/boltstore,
// store/etcdstore, store/httpstore's client) passes the conformance suite
// store/storetest, which states each clause below as a named test:
//
//   - Revisions come from one store-wide counter that only grows; a List
//     returns the revision its snapshot reflects.
//   - Update and Delete with a stale revision fail with ErrConflict and
//     write nothing; a failed Guard fails with ErrGuardFailed and writes
//     nothing. No write is lost silently.
//   - A Watch delivers every change after the given revision under its
//     prefix, in revision order, exactly once, several keys of one
//     revision included; a revision older than the history fails with
//     ErrCompacted (re-list and watch from the list's revision), and a
//     watcher that falls too far behind ends with ErrLagging.
//   - A watch that implements ProgressRequester answers a progress request
//     only after delivering every change up to the revision it reports, and
//     does not answer while its store is unreachable: a silent outage is
//     detectable.
//   - What Get returns equals what was written, or the write was refused
//     with ErrInvalid (the JSON codec refuses values that do not survive a
//     round trip). Bad input (an empty, oversized or malformed key, a nil
//     value or context) is an error matching ErrInvalid, never a panic.
//   - A write made with a cause (WithCause, a W3C traceparent) is never
//     refused for it; the in-memory store and boltstore (and a store
//     served over HTTP, which receives it as the traceparent header)
//     deliver it with the revision's watch event (Event.Cause) for as long
//     as they keep it (WithCause says how long), and an event whose
//     writer carried none has none.
//     A cause is metadata of the revision, never of the object.
//   - Modify and CreateOrUpdate retry a lost race against the newer value,
//     so callers do not write the compare-and-swap loop themselves.
//   - A Modify or CreateOrUpdate whose result would change nothing the
//     store keeps (Unchanged) is not stored: it returns the object as it
//     is, at its revision, makes no watch event, and still checks the
//     revision it read and its guards (Check: a race is retried, a failed
//     guard is ErrGuardFailed). Check, and Checker's Check that every
//     backend implements, check a write's conditions atomically without
//     writing. Update itself always writes, the same value included: a
//     lease's renewal relies on a rewrite taking a new revision.
//   - A batch of writes (WriteBatch; BatchWriter, which every backend
//     and wrapper implements) checks each write on its own, its revision
//     and guards, reports each refusal on its write with the error the
//     single write returns, and lands the others; the writes that land
//     are committed together, with no other write between them (one
//     lock, one bbolt transaction, one etcd Txn per part within etcd's
//     limits). Bad input refuses the whole batch with ErrInvalid.
//   - A store that implements Differ (the in-memory store, bbolt) tells
//     the net change after a revision, each changed key once with its
//     state now, in revision order; over it, WatchCatchingUp's watcher
//     that falls behind (ErrLagging, or its next revision gone from the
//     history) catches up by that difference instead of ending, so a
//     consumer that needs each key's latest state never re-lists for
//     falling behind. A Diff costs the keys changed since its revision,
//     not the keys held: bbolt reads its history, the in-memory store
//     its keys in the order of their latest write.
//
// Errors are values to test with errors.Is; backends wrap them with
// detail. ErrInvalid matches the ErrInvalid of every converge package.
package store
