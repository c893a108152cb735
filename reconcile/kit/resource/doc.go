// Package resource is the ready-made stored type of the common case: a
// Resource[Spec, Status] holds the desired Spec users write and the Status
// a controller observed, with the bookkeeping that tells them apart, and
// the helpers that write each half without losing the other.
//
// # Guarantees
//
//   - PutSpec bumps Generation exactly when the spec changes (go-cmp
//     equality, and on encoding stores equal bytes), keeps Status,
//     ObservedGeneration and Conditions, and retries a racing write against
//     the newer value: no write is lost, and a spec written twice is stored
//     once.
//   - WriteStatus writes with a compare-and-swap against the revision that
//     was reconciled: if the object changed since, it returns
//     store.ErrConflict and writes nothing, so a status never overwrites a
//     newer spec. A write that would change nothing is not made, so a
//     converged reconcile is idempotent (no store write, no watch event).
//   - ObservedGeneration < Generation means "not yet reconciled"; a
//     condition's LastTransitionTime changes only when its status changes.
//   - Given the controller's writer (reconcile.Request.Store), the status
//     write is fenced by the controller's term and its echo does not wake
//     the key nor cancel its backoff.
//   - WriteError puts an error in status (Ready False, a reason, the
//     error's text) and returns it unchanged for the controller to sort;
//     a write that fails returns the write's error instead, so a terminal
//     error is never left unwritten
//     (TestWriteErrorPutsTheErrorInStatusWithReadyFalseAndReturnsIt,
//     TestWriteErrorThatCannotWriteIsRetriedNotTerminal).
//   - GenerationChanged lets creations, deletions and spec changes through
//     and drops status-only changes (for status written by others).
//   - Bad input (a nil store, a stored nil value, a spec or status the
//     codec refuses, an invalid condition) is an error matching
//     store.ErrInvalid, never a panic.
//
// Values read from a store may be shared with it: both helpers copy before
// changing anything.
package resource
