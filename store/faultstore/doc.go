// Package faultstore wraps any store.Store with the faults a real store
// shows: injected errors and conflicts, latency, responses lost after a
// write was applied, watches that break or are refused as compacted, and
// outages, loud (every call and watch fails) or silent (calls fail or hang
// while open watches stay open, deliver nothing and leave progress requests
// unanswered, as an etcd member cut off from its peers does).
//
// It imports nothing but the standard library, store, store/apistore and
// the module's internal context-aware sleep, and no testing package, so
// that tests of every package, test helpers such as reconcile/reconciletest, benchmarks
// and runnable examples share one implementation.
//
// # What decides a fault
//
// Every call asks the Store's decider for a Decision before it reaches the
// wrapped store: a Plan when one is set (a script, or any function of the
// call), else the Rates, drawn from a caller-seeded *rand.Rand so that a
// run is reproducible. An outage (SetOutage) applies on top of either and
// can be switched at any time.
//
// # Guarantees
//
//   - A call failed before it reaches the wrapped store (an injected error,
//     conflict or compaction, an outage, a delay cut short by the context)
//     has no effect there, and its error matches ErrNotSent as well as the
//     store error it stands for (store.ErrUnavailable, store.ErrConflict,
//     store.ErrCompacted or the context's error).
//   - A write whose response is lost (Lose) was applied exactly as the
//     wrapped store answered; the caller gets a *LostResponseError that
//     matches store.ErrUnavailable and nothing else, and keeps that answer
//     for checkers that know what happened.
//   - A watch delivers the wrapped watch's events in order, without loss or
//     duplication, until it ends; it ends with store.ErrUnavailable when
//     broken (a Break decision, BreakWatches, a loud outage), with nil after
//     Stop, and with the context's error when its context ends. A silent
//     outage holds its events back and delivers them, in order, when the
//     outage ends.
//   - A watcher implements store.ProgressRequester exactly when the wrapped
//     watcher does; the Store implements store.Encoded, reporting the
//     wrapped store's codec (store.JSON for a store that does not say),
//     and store.Identifier, reporting the wrapped store's identity through
//     the faults (OpIdentity), and store.Checker, checking through the
//     faults as a read of the key (OpGet), and store.BatchWriter, the
//     batch going through the faults as one call (OpBatch): refused
//     whole before it is sent (an error, no results), or applied with
//     every write's answer lost (each a LostResponseError).
//   - The API-server layer's writes pass through as they are: over a
//     wrapped store that offers them (apistore.StatusWriter, Replacer,
//     Applier, PropagatingDeleter), UpdateStatus, Replace and Apply go
//     through the faults as OpUpdate and DeleteWith as OpDelete, so a
//     status write stays a status write; over one that does not, those
//     that need the layer fail with errors.ErrUnsupported (and
//     store.ErrInvalid) before anything is sent, as a served store without
//     the layer answers, and Replace and a Background DeleteWith are the
//     plain writes.
//   - Time is read only through the Sleep function the caller gives (by
//     default a timer of package time, which is the fake clock inside a
//     testing/synctest bubble): no fault takes real time in such a bubble.
//
// Nothing here is meant for production traffic: a Store is a test double.
package faultstore
