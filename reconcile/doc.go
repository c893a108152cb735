// Package reconcile runs reconciliation loops: a Controller watches a
// store of desired objects and calls a Reconciler for each key that needs
// converging. A plain controller needs this package alone; the process
// that runs several loops (leader election, probes, HTTP) is
// reconcile/manager, the ready-made Resource type with its spec and status
// helpers is reconcile/kit/resource, the health of the external systems a
// reconciler acts on (Options.Dependencies) is reconcile/dependency, the
// checkpoint of a controller's desired state (Options.Checkpoint) is
// store/checkpoint, and reconcile/reconciletest drives a reconciler to
// convergence in tests.
//
// # Guarantees
//
//   - One key is never reconciled by two workers at once; N workers serve N
//     different keys.
//   - The loop is level-triggered: changes become keys, and a key reconciled
//     once after ten changes sees the latest object.
//   - The cache is fed by List then Watch. A broken watch resumes from the
//     last revision seen; a compacted one re-lists and wakes exactly the keys
//     that changed or vanished meanwhile: no change lost, no storm of
//     reconciles of unchanged keys. (The cache is reconcile/internal/cache;
//     its package doc lists what it guarantees on its own.)
//   - Over a store that can tell what changed since a revision
//     (store.Differ: the in-memory store, bolt, views over them) a watch
//     that falls behind the writers catches up by difference instead of
//     re-listing: each key changed meanwhile is reconciled at its state
//     now, and each key the cache held and the store deleted meanwhile is
//     reconciled as deleted, with its last value. Other stores re-list.
//   - A transient error backs off per key; a terminal error (Terminal) is not
//     retried; a panic is recovered and retried; each call may have a timeout;
//     a status write that conflicts with a newer write reconciles the newer
//     object at once if the cache holds it, else as soon as the cache does.
//   - When the store is unreachable the controller keeps its cache and keeps
//     converging the world toward the last desired state it saw (other
//     sources, resyncs and retries still fire), reports itself degraded, and
//     catches up when the store returns. No desired state is lost or invented.
//   - A key outside the controller's view (not a valid store key, or not
//     under Options.Prefix) is refused wherever it enters (a Source, a
//     FromStore mapper, Enqueue): never queued, never reconciled, logged
//     once and counted (Health.Refused, Metrics.KeyRefused). A Deleted
//     request is for a key of the view that the store does not hold.
//   - The cache remembers the identity of the store it listed
//     (store.Identifier) and checks it before it resumes a watch: a store
//     of another identity (restored from a snapshot, or replaced) is
//     re-listed, never resumed from a revision of the old one, every key
//     of it is reported as changed (its revisions say nothing of the old
//     store's) and every key it lacks as deleted; a WaitForRevision of a
//     revision of the old store returns only once that re-list and its
//     reconciles are done, whether it began before the re-list or after.
//   - A store of the same identity at a revision below the cache's
//     (restored from an older copy of its file or data, or older than the
//     checkpoint the controller started from) is another history too: the
//     cache never resumes a watch after a revision the store has not
//     reached (its revision is read first, and after a progress report of
//     an open watch), re-lists it whole as above, and Health.History says
//     so (store.RolledBack; store.AnotherIdentity for the case above).
//   - With Options.Checkpoint, the controller keeps its desired state in a
//     local checkpoint, written in the background, every change of a
//     revision or none. Started while its store cannot be listed within
//     Checkpoint.StartAfter, it reconciles toward a usable checkpoint and
//     says so in Health.Checkpoint; meanwhile a key the checkpoint lacks
//     is never reconciled as deleted (AwaitingStore) until the store serves.
//     When it does, the cache resumes after the checkpoint's revision (or
//     re-lists) and wakes exactly the keys changed meanwhile; a store
//     found below the checkpoint's revision is another history (above).
//     A damaged, too old, future or foreign checkpoint is refused, logged
//     and counted, never acted on (see store/checkpoint).
//   - Ready fails with ErrDegraded while the primary store is reported
//     degraded and succeeds again once it serves; Healthy does not fail
//     for it, since a restart would lose the cache the loop heals from.
//   - While one of Options.Dependencies is down (its checks failed
//     FailureThreshold times, so within (FailureThreshold+1) × Interval,
//     or at once when a reconcile returns an error marked with
//     dependency.Down), Health lists it down with since when and its
//     latest error, Ready fails with an error matching dependency.ErrDown
//     that names it (Healthy does not), and no key is handed to the
//     reconciler: woken keys wait in the queue, reconciles in flight
//     finish. At its first successful check, within one Interval of it
//     serving again, every key that failed or waited meanwhile is
//     reconciled at once, its retries reset.
//   - Controllers given the same *dependency.Dependency share its check
//     (one per Interval while any of them runs) and its state: the
//     instant it is found down, by its check or by a reconcile of any of
//     them, every one reports it down in Health and Ready and hands out
//     no key; the instant it is back, every one retries its held keys.
//   - Writes of another kind made through Through(req, s) (the children a
//     parent makes) carry req.Store's guards, so a deposed owner's fail
//     with store.ErrGuardFailed, and their echoes seen by the
//     controller's FromStore source over s wake nothing, while others'
//     changes do
//     (TestWritesOfAnotherKindThroughTheControllerAreFencedAndTheirEchoesWakeNothing).
//   - Every source can be named (Named, or a Name method): the name is
//     shown in the triggers of the keys it wakes, on the debug page and in
//     Health.Degraded, whatever the source
//     (TestANamedSourceIsShownByItsNameWhateverItIs).
//   - Run stops intake, gives in-flight reconciles a grace period, and leaves
//     no goroutine behind.
//   - A Request's object, and each object a Lister returns, is the
//     reader's own copy of the object's fields (key, revisions, a value
//     without references): changing it changes neither the store nor a
//     later read. A value's references are shared with the cache and, in
//     memory, with the store: what they point to must not be changed.
//
// # Writes and fencing
//
// A reconcile writes through Request.Store, the controller's writer: under
// leader election (reconcile/manager with a lock.Elector) every write
// carries the term's guard, so a deposed leader's late writes fail with
// store.ErrGuardFailed; the echo of its own write neither wakes the key nor
// cancels its backoff; and the next reconcile of the key never sees an
// object older than one the controller wrote. A write that would change
// nothing (store.Modify, store.CreateOrUpdate, the API-server layer's
// writes, resource.WriteStatus) is not stored and makes no event, yet its
// check carries the term's guard too (store.Checker): a controller that
// finds nothing to change goes idle, and a deposed one still fails.
// reconciletest's Env.CheckIdle proves a controller goes idle.
// Request.Store is a store.BatchWriter: a BatchReconciler may write the
// statuses of its batch with one store.WriteBatch, one commit, each write
// fenced and its echo suppressed as if made alone.
//
// # Observability
//
// Logs go through log/slog; LoggerFrom(ctx) inside a reconcile carries the
// controller, key, revision, retries and reconcile ID. Metrics go through
// the small Metrics interface (one call per reconcile, with its Outcome) and
// queue.Metrics.
// Health, Snapshot, WaitForSync and WaitForRevision serve health checks,
// debug pages and tests.
//
// Tracing goes through the small interface of package reconcile/tracing
// (Options.Tracer; reconcile/observe/convergeotel implements it on
// OpenTelemetry):
//   - Each reconcile of a key is told the causes of the key's changes that
//     no successful or terminal reconcile has covered yet (their
//     revisions and the traceparents their writers carried,
//     store.WithCause): a retry gets the same causes, and a change that
//     superseded another before it was reconciled is given with it. A
//     settled reconcile covers the causes up to its object's revision; the
//     causes and each key's latest trace ID (KeyState.TraceID) go with the
//     key, so their memory follows the keys alive.
//   - Each write through Request.Store, and each call marked with
//     tracing.StartCall, is a span of the reconcile, made with the context the
//     Tracer returns (which carries the write's cause on to its revision).
//   - With no Tracer the loop allocates nothing more per reconcile
//     (BenchmarkReconcileLoop) and tracing.StartCall allocates nothing
//     (its TestWithoutATracerStartCallCostsNothing).
package reconcile
