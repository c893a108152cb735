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
//   - [github.com/converge-go/converge/queue]: the deduplicating workqueue. A key
//     is waiting or being processed, never both, so one key is never handled by
//     two workers at once; delayed adds on one timer, per-key backoff,
//     priorities with aging, a drain that reports what it left behind.
//   - [github.com/converge-go/converge/store]: the source of truth. A versioned
//     key-value Store with compare-and-swap writes, guards (fencing) and
//     watches that resume from a revision; the in-memory store, typed views
//     over a byte store, and store/storetest, the conformance suite. Nested
//     modules add bbolt (store/boltstore) and etcd (store/etcdstore).
//   - [github.com/converge-go/converge/lock]: per-key locks, leases with
//     fencing tokens over any Store, and leader election.
//   - [github.com/converge-go/converge/reconcile]: Reconciler, Controller
//     (cache, sources, queue, workers; keeps healing while its store is
//     down), Resource with generation bookkeeping, and Manager to run several
//     controllers with health endpoints and leader election.
//     reconcile/reconciletest tests reconcilers on a fake clock with
//     injected faults.
//
// Start with the example of package reconcile, then the queue's worker loop
// and the store's contract. go run ./examples/replicaset shows the whole loop
// on real processes.
package converge
