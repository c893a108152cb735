// Package checkpoint is a controller's memory of its desired state beyond
// its store: a reconcile.Controller with Options.Checkpoint keeps, in a
// Store of this package (store/boltstore's OpenCheckpoint keeps it in a
// local file), the objects of its cache and the store revision they
// reflect, so that a controller restarted while its store is unreachable
// (down, damaged, lost) reconciles toward the desired state it last saw
// instead of waiting, idle, for the store to come back.
//
// The controller writes the checkpoint in the background: the keys its
// cache changed since the previous write, every Options.Interval (and at
// once after a list that changed nothing; one that changed keys waits for
// the next Interval, so that its write does not compete with the
// reconciles it woke); the whole cache only for its first write and after
// a failed one. No write blocks the cache or a reconcile. Read
// back, a checkpoint is a state its store had: every object at its
// revision as the store held it at the checkpoint's Revision, every
// change of a revision or none (several keys may share one).
//
// At its start the controller lists its store as usual. Only if the
// store cannot be listed within Options.StartAfter does it load the
// checkpoint, and it uses it unless it is damaged, of another prefix,
// older than Options.MaxAge, seen more than MaxSkew in the future (its age
// unknown: State.CheckAge), or of another store (when the store answers
// its identity, store.Identifier): then it says why
// (Status.Refused) and waits for its store as it would without one.
//
// A checkpoint is newer than its store when the store, under the same
// identity, answers a revision below the checkpoint's: its file or data
// was restored from an older copy. Its revisions then name other writes
// than the checkpoint's, so the controller takes it for another history
// (store.RolledBack), as it takes a store of another identity
// (store.AnotherIdentity): it re-lists the store whole, every key it
// holds is reconciled from its value and every key the checkpoint held
// that it lacks as deleted with its last value, the checkpoint is
// rewritten from the store, and reconcile.Health.History says so.
//
// # Guarantees
//
// Each is proven by the test named after it (in reconcile, with a
// Store in memory, and in store/boltstore, with its files):
//
//   - A controller that cannot list its store within StartAfter starts
//     from a usable checkpoint: its cache holds the checkpoint's objects
//     at its revision, its workers reconcile them, and Health.Checkpoint
//     says it runs from the checkpoint, of which revision and how old
//     (TestAControllerStartedWithoutItsStoreReconcilesItsCheckpoint).
//   - While it does, a key the checkpoint lacks is never reconciled as
//     deleted, since the store may hold it: woken by a source, it waits
//     (reconcile.AwaitingStore) until the store serves, and is then
//     reconciled as the store has it
//     (TestAKeyTheCheckpointLacksIsNotReconciledAsDeletedUntilTheStoreIsBack).
//   - When the store serves again, the cache resumes its watch after the
//     checkpoint's revision (or re-lists, if that history is compacted),
//     exactly the keys changed meanwhile are reconciled, and the
//     checkpoint is kept current again
//     (TestTheStoreBackReconcilesExactlyTheKeysChangedMeanwhile).
//   - A store that serves again below the checkpoint's revision under the
//     same identity (rolled back to an older copy, to an empty one), or
//     under another identity, is re-listed whole as another history:
//     every key it holds is reconciled from its value, every key the
//     checkpoint held that it lacks as deleted with its last value, later
//     writes are seen, Health.History names why, and the checkpoint is
//     rewritten from it; a store rolled forward or emptied is followed from
//     the checkpoint's revision. checkpointtest.Run holds these cases and
//     runs on memory, bolt, etcd and bolt over HTTP
//     (TestFromACheckpointTheStoreIsReconciledAsItIsOnceItServes).
//   - A checkpoint exactly MaxAge old, or seen up to MaxSkew in the future,
//     is used; older, or further ahead, it is refused with ErrTooOld or
//     ErrFuture named in Status.Refused
//     (TestACheckpointSeenInTheFutureIsRefusedAndOneAtItsMaximumAgeUsed).
//   - A checkpoint older than MaxAge, of another prefix, or damaged is
//     refused: the controller waits for its store and says why
//     (TestACheckpointPastItsMaximumAgeIsRefused,
//     TestADamagedCheckpointIsIgnoredLoggedAndCounted).
//   - A checkpoint captured while the cache is in the middle of a revision
//     (a multi-key transaction half applied) holds none of that revision's
//     changes (TestACheckpointHoldsEveryChangeOfARevisionOrNone).
//   - In a file (store/boltstore), a checkpoint read back after the
//     writing process was killed at any moment is one its store had
//     (TestAKilledControllersCheckpointIsAStateItsStoreHad, 50 SIGKILL
//     cycles under churn), and a file damaged or truncated anywhere is
//     detected, never a panic, never read as a state
//     (TestADamagedCheckpointFileIsDetected).
//
// # Cost
//
// Memory: one entry per key changed since the previous write (the values
// are the cache's own, shared), and the values, before it, of the keys of
// a revision not yet complete. I/O: one transaction per Interval while
// keys change, holding only those keys; a whole rewrite at the first write
// and after a failed one; while nothing changes, one small write a minute
// (so that the checkpoint's age says when the store last served). The
// figures at 100,000 objects are in reconcile/internal/bench/README.md.
package checkpoint
