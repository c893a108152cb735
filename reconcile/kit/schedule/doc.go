// Package schedule runs work at the slots of schedules, cron or interval:
// Parse reads a cron spec (five fields, @daily and the like, a time zone)
// or an interval ("@every 90m", or Every) into a Schedule whose Next and
// Prev find its slots, daylight saving time included; a Source wakes a
// controller's keys at their schedules' slots; and a few helpers make one
// child object per slot (SlotKey, Due, Running, Retention). The helpers
// take slots, not specs: they work alike on both kinds of schedule.
//
// # Guarantees
//
//   - Next(t) is the first slot strictly after t, Prev(t) the latest at or
//     before t, by one rule across offset changes: an instant is a slot
//     when the wall clock reaches or passes a matching minute it has never
//     shown before. A minute skipped by a spring-forward jump runs at the
//     end of the jump (03:00 for "30 2 * * *" in Europe/Paris), once
//     however many minutes it skipped; a minute shown twice on fall-back
//     runs the first time only. Read a schedule in UTC to run by elapsed
//     time instead.
//   - An interval schedule's slots are the multiples of its interval
//     since the Unix epoch, the same in every process and after every
//     restart, never moved by daylight saving time; Due, SlotKey and
//     Retention work on them as on cron slots
//     (TestAnIntervalSchedulesSlotsAreTheMultiplesOfItsIntervalSinceTheEpoch,
//     TestAnIntervalScheduleIsDueOnceAfterDowntimeAndKeysItsSlots,
//     TestAnIntervalScheduleWakesItsKeyAtEachSlot).
//   - A spec that cannot be parsed or has no slot is an error matching
//     ErrInvalid (and store.ErrInvalid) whose message names the field at
//     fault; nothing here panics.
//   - A Source wakes each listed key once at each of its slots, on the
//     process's clock; slots that pass while it is not running wake their
//     keys once when it starts again.
//   - SlotKey gives one slot one key, the same every time; the keys under
//     a prefix sort as their slots.
//   - Due returns at most one slot after downtime, the latest: missed runs
//     are caught up once, never in a burst.
//   - Retention.Expired never returns a run not finished, nor the newest
//     success, however many newer runs failed.
//
// # Children per slot
//
// A scheduled object (a ScheduledBackup) makes one child object per slot
// (a Backup), and a controller of the children does the work. Its
// reconcile, woken by the schedule Source at each slot:
//
//  1. Lists its children (the store's List under its child prefix, or an
//     index of the children's controller) and reads each one's slot
//     (SlotOf) and state.
//  2. If one is still running (Running), waits: at most one run at a
//     time. The child's own changes wake the parent again (a
//     reconcile.FromStore source mapping a child to its parent), and once
//     it has finished, Due gives the latest slot that passed meanwhile.
//  3. Otherwise asks Due for the slot to run, given the newest slot that
//     has a child, and creates that slot's child with store.Create under
//     SlotKey(prefix, slot). The key is the slot's, so a crash between
//     the create and the status write, a retry, or two replicas racing
//     cannot make a second child for it: the second create fails with
//     store.ErrExists, and the reconcile goes on as if it had made it.
//     Over store/apistore, the child names the schedule in its Owners, so
//     that the garbage collector deletes the children with the schedule.
//  4. Deletes what Retention.Expired returns, and records in its status
//     the slot it last ran and the next one (Next).
//
// In code, with backups of type *Backup under "backups/NAME/":
//
//	func (r *scheduler) Reconcile(ctx context.Context, req reconcile.Request[*ScheduledBackup]) (reconcile.Result, error) {
//		sched, err := schedule.Parse(req.Object.Value.Spec, nil)
//		if err != nil {
//			return reconcile.Result{}, reconcile.Terminal(err) // and say so in status
//		}
//		prefix := "backups/" + path.Base(req.Key) + "/"
//		children, _, err := r.backups.List(ctx, prefix) // in key order: slot order
//		if err != nil {
//			return reconcile.Result{}, err
//		}
//		var runs []schedule.Run
//		var last time.Time
//		for _, c := range children {
//			last, _ = schedule.SlotOf(prefix, c.Key)
//			runs = append(runs, schedule.Run{Key: c.Key, Slot: last, Finished: c.Value.Done, Succeeded: c.Value.OK})
//		}
//		_, busy := schedule.Running(runs, func(r schedule.Run) bool { return r.Finished })
//		if slot, due := sched.Due(last, time.Now()); due && !busy {
//			_, err := r.backups.Create(ctx, schedule.SlotKey(prefix, slot), &Backup{})
//			if err != nil && !errors.Is(err, store.ErrExists) {
//				return reconcile.Result{}, err
//			}
//		}
//		for _, key := range r.keep.Expired(runs) {
//			// delete key, conditioned on the revision listed
//		}
//		return reconcile.Result{}, nil
//	}
//
// The package's example (Example_childrenPerSlot) runs this pattern
// through a week of nights with downtime, failures and retention.
package schedule
