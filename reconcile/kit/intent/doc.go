// Package intent makes side effects that must happen once — start a
// process, take a backup, send a payment — happen once across crashes:
// the intent-before-action pattern as a reusable piece, and files made
// good only by a rename after fsync.
//
// # The pattern
//
// A reconcile that acts blindly acts twice when it crashes between acting
// and recording that it did. So, for each attempt at a side effect:
//
//  1. Record the intent through the store first: an attempt ID unique to
//     the object, its generation and the attempt's number (ID), written
//     with a compare-and-swap into the object's status (a Record). If the
//     write fails, nothing was done.
//  2. Act under that ID, carrying it into the world (a process's
//     environment, a row's key, a file's name), where a second act under
//     the same ID does nothing.
//  3. Record the result.
//
// A reconcile that finds a pending intent (after a crash, a restart, a
// change of leader) never acts again blindly: it asks the world about the
// attempt by its ID and adopts it (it is still running: it is the same
// attempt), judges it (it finished: its result, which the world kept, is
// recorded) or, if the world has nothing of it (it never started), acts
// under the same ID. Decide is that decision, a pure function; Once.Step
// carries it out, given how to find an attempt in the world by its ID and
// how to act under one.
//
// # Worked example: examples/jobs
//
// The jobs example runs each job's command as a process, at most once per
// attempt, across SIGKILLs of its daemon. Its phases are this pattern:
//
//   - Starting is the intent (Begin): attempt n under a run ID made of the
//     job's key, CreateRevision, generation and n, written to status before
//     anything is started.
//   - The attempt is a shim process carrying the run ID in its environment
//     (Act); it claims the ID with a file created exclusively, so that a
//     second shim of the same run runs nothing (the world deduplicates).
//   - Running records the shim's pid and start time (what Act returning
//     Running leaves to a later look); the shim writes the outcome to a
//     result file, synced and renamed into place (WriteFile), before it
//     exits.
//   - After a restart, a job found Starting or Running is settled first: a
//     process carrying its run ID is adopted (Adopt); a result file judges
//     it (Judge), and a claim without a result is judged lost; no claim
//     means the command never ran, and it is launched under the same run
//     ID (Act).
//   - Succeeded, Backoff and Failed are the judged result; Backoff is a
//     finished attempt after which another is wanted (Once.Again).
//
// # Guarantees
//
//   - Inside a reconcile of a controller with a Tracer, each Find and Act
//     is a span of that reconcile ("intent find", "intent act";
//     tracing.StartCall), beside its writes
//     (TestInATracedReconcileFindAndActAreSpans).
//   - Step acts only after the attempt's intent is written to the store,
//     and only when the world reports nothing of the attempt: an attempt
//     the world has running is adopted, one it has finished is judged; at
//     most one attempt of an object is pending at a time, and one is
//     settled (adopted to its end or judged) before the next begins.
//   - Every result the world keeps is recorded: an attempt that finished
//     while its recording failed or its process died is judged by the next
//     Step.
//   - IDs are unique per object incarnation, generation and attempt, and
//     safe as file names.
//   - WriteFile and File.Commit make a file's content its path's only by a
//     rename after fsync: the path is always absent, as it was, or
//     complete, never partial, whenever the writer is killed.
//   - Runs knows an attempt's liveness without claim files of the
//     caller's: Running while a process holds the lock Start handed it
//     (or Hold took in process), across a SIGKILL of the process that
//     started it; Finished with its result once it wrote one, and Lost
//     once it ended without, killed or crashed; a second Start of one ID
//     is refused (ErrStarted), unless the first never started its
//     process (its starter was killed first, or the process could not
//     start): that attempt is Absent, and the next Start runs it, once
//     (TestAnAttemptWhoseProcessNeverStartedIsAbsentAndRunByTheNextStart,
//     TestAHoldTakesOverAnAttemptWhoseProcessNeverStarted,
//     TestAnAttemptIsRunningWhileItsProcessLivesAndLostOnceKilled,
//     TestAnAttemptOutlivesItsSIGKILLedStarterAndIsKnownRunningThenLost,
//     TestAnAttemptsResultIsFoundOnceItEnds,
//     TestAnAttemptHeldInProcessIsRunningUntilReleased).
//   - Bad input is an error matching ErrInvalid, never a panic.
package intent
