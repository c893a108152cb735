// Package drift finds drift that makes no store event: a Source that polls
// the world on an interval and wakes exactly the keys whose objects
// changed behind the controller's back. A role altered by hand in
// PostgreSQL, a file edited, a process gone: none of them writes to the
// store, so no watch reports them, and a periodic resync would reconcile
// every key to find the few that drifted.
//
// The operator supplies a ListFunc that lists the actual objects, each
// with the controller's key for it and a fingerprint of what the
// reconciler compares:
//
//	roles, err := drift.New(func(ctx context.Context) ([]drift.Observed, error) {
//		rows, err := db.Query(ctx, "SELECT rolname, rolsuper, rolcanlogin, rolconnlimit FROM pg_roles")
//		// ... for each row:
//		//	out = append(out, drift.Observed{Key: "roles/" + name, Fingerprint: drift.Fingerprint(super, login, limit)})
//	}, drift.Options{Name: "postgres roles", Interval: 30 * time.Second})
//	c, err := reconcile.New(s, rec, reconcile.Options[*Role]{Name: "roles", Sources: []reconcile.Source{roles}})
//
// # Guarantees
//
//   - A poll wakes exactly the keys whose fingerprint changed since the
//     previous poll, that appeared, or that vanished; unchanged keys wake
//     nothing. The first poll learns the baseline and wakes nothing, unless
//     Options.WakeOnFirstPoll.
//   - Drift is found by the first poll after it: within one Interval
//     (lengthened by Jitter, if any) plus the poll's own time, and its key
//     woken then, or as soon as the rate limit allows.
//   - Wake-ups are rate-limited (Options.PerSecond, Burst): a burst of
//     drift is spread, in the order found, while polls go on; no key is
//     lost, and a key found again before it was woken is woken once.
//   - A failed poll wakes nothing and loses nothing: the baseline and the
//     keys still to wake are kept, Err reports the error (the
//     controller's Health.Degraded shows it under the source's name,
//     without making it unready), and Start returns it so that the
//     controller logs it and starts the source again after its backoff;
//     the next successful poll compares with the baseline and clears Err
//     (TestAFailingPollIsLoggedRetriedByTheControllerAndLosesNoDrift).
//   - Keys it woke show "source NAME" in the controller's KeyState
//     triggers and debug page (Options.Name).
//   - Options out of range are an error matching ErrInvalid (and
//     store.ErrInvalid); nothing here panics.
//
// The reconciler's own changes to the world are drift too: the poll after
// a reconcile that changed an object sees its new fingerprint and wakes
// its key once more, and that reconcile finds nothing to do.
package drift
