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
//     two workers at once; delayed adds, per-key backoff and priorities.
//   - [github.com/converge-go/converge/store]: the source of truth. A versioned
//     key-value Store with compare-and-swap writes and watches that resume
//     from a revision; an in-memory store, and nested modules for bbolt and etcd.
//   - lock: per-key locks, leases and leader election with fencing tokens,
//     over any Store.
//   - reconcile: Reconciler, Controller (sources, cache, queue, workers) and a
//     Manager to run several controllers under one context.
//
// Start with the queue's worker-loop example, then the store's contract.
package converge
