// Package converge is a library for reconciliation loops: a program declares
// the state it wants, observes the state that exists, and converges the one to
// the other, forever.
//
// # The loop
//
// A reconciliation loop does three things, over and over:
//
//   - Observe: sources (a store's watch, events from the world, timers) turn
//     changes into keys. Keys, not events: the loop is level-triggered. Ten
//     changes to one object before a worker gets to it are one reconcile, and
//     a missed event is healed by the next one or by a periodic resync.
//   - Compare: the reconciler receives a key and the latest desired object
//     (its spec) and reads the actual state of the world itself.
//   - Act: it changes the world toward the spec, then records what it saw
//     (the status) with a compare-and-swap write. Any error, timeout or panic
//     puts the key back in the queue with backoff.
//
// Because every pass only compares desired with actual, the loop does not
// care how the world got into its state: a crashed step is retried, a lost
// server replaced. The price is idempotency: a reconcile that finds nothing
// to change must change nothing, so that it can run a thousand times.
//
// # The packages
//
// Every package of the repository, one line each, by kind; each folder's
// package doc says more. Paths are relative to github.com/converge-go/converge.
//
// The loop:
//
//   - [github.com/converge-go/converge/queue]: the deduplicating workqueue. A key
//     is waiting or being processed, never both, so one key is never handled by
//     two workers at once; delayed adds on one timer, per-key backoff,
//     priorities with aging, a drain that reports what it left behind.
//   - [github.com/converge-go/converge/reconcile]: Reconciler and Controller
//     (cache, sources, queue, workers; keeps healing while its store is
//     down).
//   - reconcile/kit/resource: the ready-made stored type, Resource[Spec, Status],
//     with its generation bookkeeping and finalizer helper.
//
// Stores and backends:
//
//   - [github.com/converge-go/converge/store]: the source of truth. A versioned
//     key-value Store with compare-and-swap writes, guards (fencing) and
//     watches that resume from a revision; the in-memory store and typed views
//     over a byte store.
//   - store/apistore: the API-server layer over any store: finalizers and the
//     deletion mark, generation, status owned by the layer, owner references.
//   - store/checkpoint: a controller's memory of its desired state beyond
//     its store (reconcile.Options.Checkpoint), so that it heals while the
//     store is gone; store/boltstore keeps it in a file.
//   - store/boltstore (a nested module): the store in one bbolt file.
//   - store/etcdstore (a nested module): the store over etcd v3;
//     etcdembed runs an embedded member, etcdprocs real server processes.
//   - store/httpstore: any store served over HTTP, and a client that is a
//     store.
//   - store/snapshot: consistent snapshots of any store, saved, chosen and
//     read back.
//
// Locks:
//
//   - [github.com/converge-go/converge/lock]: per-key locks, leases with
//     fencing tokens over any Store, and leader election (Elector).
//
// Parts of the loop (packages the controller itself imports):
//
//   - reconcile/internal/cache: the controller's cache of its store, fed by
//     list and watch, telling its hooks and observer what changed; it
//     knows nothing of checkpoints (the controller's journal observes it).
//   - reconcile/dependency: the health of the external systems a program
//     acts on; a controller pauses while one is down.
//   - reconcile/shard: a controller's keys split among replicas, each write
//     fenced by its bucket's epoch.
//   - reconcile/tracing: what the loop tells a tracer of each reconcile
//     (Options.Tracer), and StartCall to mark an external call.
//
// Kits built on the loop, under reconcile/kit (the loop never imports them):
//
//   - reconcile/kit/drift: a Source that polls the world and wakes the keys
//     that drifted without a store event.
//   - reconcile/kit/schedule: cron schedules and a Source waking keys at
//     their slots.
//   - reconcile/kit/owners: owner references, a Source for owners of changed
//     children, and the garbage Collector.
//   - reconcile/kit/prune: deletes from the world what the operator made and
//     no longer wants.
//   - reconcile/kit/intent: side effects that happen once across crashes.
//
// The process runner:
//
//   - reconcile/manager: runs a process's controllers and other runnables
//     under one context, leader-only ones behind a lock.Elector, with health
//     probes and one HTTP server; it links no part of the loop, so the store
//     server runs on it too.
//
// Observers, under reconcile/observe:
//
//   - reconcile/observe/convergeprom (a nested module): Prometheus metrics under
//     controller-runtime's names.
//   - reconcile/observe/debugpage: the page that answers "why isn't key X
//     converging?" (its browser test is the nested module browsertest).
//
// Commands, under store/cmd:
//
//   - store/cmd/convergestore (a nested module): a store server,
//     bbolt behind HTTP with the API-server layer.
//   - store/cmd/convergectl: reads and changes a served store, as
//     kubectl does an API server's.
//
// Examples (the nested module examples; examples/internal holds what they
// share):
//
//   - examples/tenlines: the README's ten-line controller, kept runnable.
//   - examples/replicaset: the ReplicaSet of real child processes (its
//     Reconciler in examples/replicaset/controller); examples/failover runs
//     it as three replicas through a leader's crash.
//   - examples/jobs: a job runner over a bbolt store served over HTTP.
//   - examples/postgres: an operator of a real PostgreSQL server.
//   - examples/sharded: keys split among replica processes with
//     reconcile/shard.
//
// Test kits, imported by tests only: store/storetest and
// store/apistore/apistoretest (the conformance suites every backend runs),
// store/httpstore/httpstoretest, store/snapshot/snapshottest,
// store/faultstore (injected faults), reconcile/reconciletest (reconcilers
// on a fake clock), reconcile/checkpointtest and
// reconcile/shard/shardtest.
//
// Suites that import everything, nested modules under reconcile/internal:
// bench (the benchmarks and their figures) and robustness
// (linearizability checks of the stores under faults).
//
// Internal, leaves only: helpers the packages share: atomicfile, bearer,
// cputime, ctxtime, exactjson (the one exact-JSON rule), httpguard, invalid,
// panicerr (a recovered panic) and running (the
// errors every package's ErrInvalid and ErrAlreadyRunning match),
// mapshrink, nilness, pipenet, privatefile (the one rule for private files
// and trusted places), syncbuf, testcerts and tokenfile; store/internal
// holds codecopt, the backends' codec option.
//
// Start with the example of package reconcile, then the queue's worker loop
// and the store's contract. go run ./examples/replicaset shows the whole loop
// on real processes.
package converge
