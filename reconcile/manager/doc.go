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
//   - With Options.Dependencies, the manager is unready while one is down
//     (on every replica, followers included): Ready and /readyz name it,
//     since when and its latest error; it is never unhealthy for it. A
//     controller's own dependency down makes it unready through the
//     controller's Ready.
//   - A *dependency.Dependency given to the manager and to its
//     controllers is one check per Interval and one state for them all:
//     the manager and every controller are unready for it from the same
//     instant. Add refuses (ErrInvalid) a runnable that depends on another
//     Dependency of the same name as one the manager or an added runnable
//     has.
//   - With Options.Server, the HTTP server (probes, and what Handle mounts)
//     starts first and shuts down gracefully within the shutdown timeout:
//     requests in flight finish, handlers' shutdown hooks run
//     (http.Server.RegisterOnShutdown), and streams still open at half the
//     timeout are closed.
//   - Bad input (a nil runnable, a duplicate name, a negative timeout, a
//     bad pattern, a malformed server option) is an error matching
//     ErrInvalid, never a panic.
//
// # What the HTTP server protects
//
// Every connection to the server has limits (ServerOptions.ReadTimeout
// and the others, by default those httpstore.NewServer sets): a client
// that sends its request slowly, or never reads the answer, is cut off.
// Every request, the probes included, then passes these checks before any
// handler sees it; a refused request reaches no handler, is answered at
// once with a plain-text reason, without waiting for its body, and closes
// its connection:
//
//   - Host (403): the Host header must be an IP literal, "localhost", a
//     name under ".localhost" or one of ServerOptions.AllowedHosts, so a
//     DNS-rebinding page cannot read anything the server serves.
//   - Origin (403): a state-changing request (any method but GET, HEAD and
//     OPTIONS) from another origin's page, a file:// page ("null")
//     included, is refused unless the origin is one of
//     ServerOptions.TrustedOrigins, whatever its credentials. Requests
//     without browser headers (curl, Go clients) pass.
//   - Tokens (401), once ServerOptions.Tokens has any: every request must
//     carry one, compared in constant time. The probes answer without a
//     token (GET and HEAD of /healthz and /readyz), but with the status
//     and one word only ("ok", "unready", "unhealthy"), never the failed
//     checks, which name keys and errors. (Readyz and Healthz mounted on
//     another server answer in full: that server's protection is its
//     own.)
//
// It does not protect:
//
//   - the network: without ServerOptions.TLS, tokens and answers travel
//     in clear; TLS, and client certificates, are the caller's to set;
//   - paths from one another: a token opens every path the server serves
//     (there is no per-path authorization); a mounted handler that
//     checks tokens itself, as httpstore's does, still decides what each
//     may do there;
//   - anything, without Tokens: whoever can connect reads and calls
//     everything mounted (the debug page, metrics, a store), so bind to
//     loopback or a private network then;
//   - content types: the server requires no JSON of a state change; a
//     mounted handler whose writes carry JSON checks that itself, as
//     httpstore's does (httpguard.RequireJSON), a second defence behind
//     the origin check.
package manager
