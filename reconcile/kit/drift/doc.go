// Package drift finds drift that makes no store event: a Source that polls
// the world on an interval and wakes exactly the keys whose objects
// changed behind the controller's back. A role altered by hand in
// PostgreSQL, a file edited, a process gone: none of them writes to the
// store, so no watch reports them, and a periodic resync would reconcile
// every key to find the few that drifted.
//
// The operator supplies a ListFunc that lists the actual objects, each
// with the controller's key for it and a fingerprint of what the
// reconciler compares, and its reconciler tells the source, at the end of
// each reconcile, the fingerprint of what it made or observed
// (Source.Reconciled):
//
//	roles, err := drift.New(func(ctx context.Context) ([]drift.Observed, error) {
//		rows, err := db.Query(ctx, "SELECT rolname, rolsuper, rolcanlogin, rolconnlimit FROM pg_roles")
//		// ... for each row:
//		//	out = append(out, drift.Observed{Key: "roles/" + name, Fingerprint: drift.Fingerprint(super, login, limit)})
//	}, drift.Options{Name: "postgres roles", Interval: 30 * time.Second})
//	c, err := reconcile.New(s, rec, reconcile.Options[*Role]{Name: "roles", Sources: []reconcile.Source{roles}})
//	// in rec.Reconcile, once the role is as desired (none if dropped):
//	//	roles.Reconciled(req.Key, drift.Fingerprint(super, login, limit))
//
// # Guarantees
//
//   - What is expected of a key is what the reconciler last reported it
//     made or observed, or what the latest poll listed, whichever came
//     later. A poll wakes exactly the keys whose listed fingerprint
//     differs from what is expected of them, that appeared or that
//     vanished; the others wake nothing. The first poll wakes only
//     reported keys that differ, and learns the rest, unless
//     Options.WakeOnFirstPoll.
//   - Drift is found by the first poll after it, whatever sequence of
//     reconciles and hand changes came between: an object the reconciler
//     made and someone dropped before the next poll is woken by it,
//     though both polls list it absent, and the reconciler's own changes,
//     reported, wake nothing
//     (TestEveryKeyThatDiffersFromWhatTheReconcilerLastMadeIsWokenByTheNextPoll,
//     a model over random sequences). It is found within one Interval
//     (lengthened by Jitter, if any) plus the poll's own time, and its
//     key woken then, or as soon as the rate limit allows. A report made
//     while a poll lists is kept over that poll's listing: it costs at
//     most one needless wake-up, never a missed one.
//   - A reconcile that ends with the world not as it wants it (a look
//     after its own change finds it otherwise: changed by hand in
//     between) says so (Source.Drifted), and the next poll wakes its key
//     whatever it lists: what it found is never taken for what it made
//     (the same model).
//   - Without reports the source compares each poll with the previous
//     one: a change undone between two polls (made by the reconciler,
//     dropped by hand) is not seen, and the reconciler's own changes wake
//     their keys once more at the next poll.
//   - Wake-ups are rate-limited (Options.PerSecond, Burst): a burst of
//     drift is spread, in the order found, while polls go on; no key is
//     lost, and a key found again before it was woken is woken once.
//   - A failed poll wakes nothing and loses nothing: what is expected of
//     each key and the keys still to wake are kept, Err reports the
//     error (the controller's Health.Degraded shows it under the
//     source's name, without making it unready), and Start returns it so
//     that the controller logs it and starts the source again after its
//     backoff; the next successful poll compares with what is expected
//     and clears Err
//     (TestAFailingPollIsLoggedRetriedByTheControllerAndLosesNoDrift).
//   - Memory follows keys alive: the source holds a fingerprint for each
//     key of the latest listing and each key reported since it began.
//   - Keys it woke show "source NAME" in the controller's KeyState
//     triggers and debug page (Options.Name).
//   - Options out of range are an error matching ErrInvalid (and
//     store.ErrInvalid); nothing here panics.
//
// # What it does not find
//
// A source sees only what its fingerprints cover, and only what its
// reconciler reports. Drift in a field the fingerprint leaves out, or
// undone between two polls for a reconciler that does not report, is
// found by no poll: only a periodic resync (reconcile.Options.ResyncPeriod),
// which reconciles every cached key whether it drifted or not, puts it
// back, within that period. A resync is the backstop for what the
// fingerprints miss, at the cost of a reconcile of every key per period;
// a reporting reconciler whose fingerprints cover what it compares needs
// none for drift.
package drift
