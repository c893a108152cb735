// Package reconcile runs reconciliation loops: a Controller watches a
// store of desired objects and calls a Reconciler for each key that needs
// converging, with a Manager to run several controllers under one context.
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
//     reconciles of unchanged keys.
//   - A transient error backs off per key; a terminal error (Terminal) is not
//     retried; a panic is recovered and retried; each call may have a timeout;
//     a status write that conflicts with a newer write reconciles the newer
//     object at once.
//   - When the store is unreachable the controller keeps its cache and keeps
//     converging the world toward the last desired state it saw (other
//     sources, resyncs and retries still fire), reports itself degraded, and
//     catches up when the store returns. No desired state is lost or invented.
//   - Run stops intake, gives in-flight reconciles a grace period, and leaves
//     no goroutine behind.
//
// # Running several controllers
//
// A Manager runs controllers and other runnables under one context, stops
// them all on the first fatal error, and serves /healthz and /readyz. With a
// lock.Elector it runs leader-only runnables (controllers, unless
// Options.WithoutLeaderElection) only while this process leads, stops them
// the moment leadership is in doubt, and runs them again at the next term.
// A reconcile's context carries the term's lock (lock.FromContext): writes
// made with its Guard are rejected by the store once another process leads,
// so a deposed leader's late writes cannot land.
//
// # Observability
//
// Logs go through log/slog; LoggerFrom(ctx) inside a reconcile carries the
// controller, key, revision, attempt and reconcile ID. Metrics go through
// the small Metrics interface (controller-runtime's names) and queue.Metrics.
// Health, Snapshot, WaitForSync and WaitForRevision serve health checks,
// debug pages and tests.
package reconcile
