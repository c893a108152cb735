// Package manager runs the loops of a process: a Manager starts
// controllers and other Runnables under one context, gates the leader-only
// ones on a lock.Elector, answers readiness and liveness probes, serves the
// process's HTTP endpoints on one address, and stops everything together.
//
// # Guarantees
//
//   - Run starts every runnable in its own goroutine and returns only when
//     all have returned, or names the ones still running when the shutdown
//     timeout is over (ErrShutdownTimeout): no runnable is silently left
//     behind.
//   - The first fatal error (a runnable's error, or its panic as a
//     *reconcile.PanicError) stops the others and is returned, wrapped with
//     the runnable's name.
//   - With an Elector, leader-only runnables (reconcile controllers, unless
//     reconcile.Options.WithoutLeaderElection) run only while this process
//     leads, under a context that is cancelled the moment leadership is in
//     doubt and carries the term's lock, so their writes are fenced; they
//     run again at the next term. Followers keep serving probes and HTTP.
//   - /readyz and /healthz answer from each runnable's ReadyChecker and
//     HealthChecker; a check that panics is reported as a failure.
//   - With Options.Server, the HTTP server (probes, and what Handle mounts)
//     starts first and shuts down gracefully within the shutdown timeout:
//     requests in flight finish, streams are closed before the deadline.
//   - Bad input (a nil runnable, a duplicate name, a negative timeout, a
//     bad pattern) is an error matching ErrInvalid, never a panic.
package manager
