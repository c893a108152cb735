package schedule_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/schedule"
	"github.com/converge-go/converge/store"
)

// backupSchedule is the scheduled object: a ScheduledBackup.
type backupSchedule struct {
	Spec string // a cron spec
	Keep int    // successful backups to keep
}

// backup is a child, one per slot; a backup controller runs it and
// records how it ended.
type backup struct {
	Done, OK bool
}

// scheduler makes one backup per slot of each backupSchedule, as the
// package doc describes.
type scheduler struct {
	backups store.Store[*backup]
}

// childPrefix is where the backups of the schedule at key live.
func childPrefix(key string) string {
	return "backups/" + strings.TrimPrefix(key, "schedules/") + "/"
}

func (r *scheduler) Reconcile(ctx context.Context, req reconcile.Request[*backupSchedule]) (reconcile.Result, error) {
	if req.Deleted {
		return reconcile.Result{}, nil // its backups go with owner references (not shown)
	}
	return reconcile.Result{}, r.step(ctx, req.Key, req.Object.Value, time.Now())
}

// step is one reconcile of the schedule at key, at now.
func (r *scheduler) step(ctx context.Context, key string, spec *backupSchedule, now time.Time) error {
	sched, err := schedule.Parse(spec.Spec, nil)
	if err != nil {
		return reconcile.Terminal(err) // a real controller says so in status too
	}
	prefix := childPrefix(key)
	children, _, err := r.backups.List(ctx, prefix) // key order is slot order
	if err != nil {
		return err
	}
	var runs []schedule.Run
	var last time.Time
	for _, c := range children {
		last, _ = schedule.SlotOf(prefix, c.Key)
		runs = append(runs, schedule.Run{Key: c.Key, Slot: last, Finished: c.Value.Done, Succeeded: c.Value.OK})
	}
	_, busy := schedule.Running(runs, func(r schedule.Run) bool { return r.Finished })
	if slot, due := sched.Due(last, now); due && !busy {
		// The key is the slot's: a crash or a retry cannot make two.
		_, err := r.backups.Create(ctx, schedule.SlotKey(prefix, slot), &backup{})
		if err != nil && !errors.Is(err, store.ErrExists) {
			return err
		}
	}
	expired := schedule.Retention{Succeeded: spec.Keep, Failed: 1}.Expired(runs)
	for _, c := range children {
		for _, key := range expired {
			if c.Key == key {
				if _, err := r.backups.Delete(ctx, key, c.Revision); err != nil && !errors.Is(err, store.ErrNotFound) {
					return err
				}
			}
		}
	}
	return nil
}

// A week of nights of a ScheduledBackup: one Backup per slot, created
// with a key of its own; a night that finds the previous backup still
// running waits for it; after downtime, one catch-up; retention keeps one
// success and one failure, and never deletes the newest success, however
// many newer backups fail.
func Example_childrenPerSlot() {
	ctx := context.Background()
	backups := store.NewMemory[*backup]()
	r := &scheduler{backups: backups}
	nightly := &backupSchedule{Spec: "0 3 * * *", Keep: 1}
	at := func(day, hour int) time.Time { return time.Date(2025, 6, day, hour, 0, 0, 0, time.UTC) }
	finish := func(day int, ok bool) { // the backup controller's part
		key := schedule.SlotKey("backups/nightly/", at(day, 3))
		obj, err := backups.Get(ctx, key)
		if err == nil {
			backups.Update(ctx, key, &backup{Done: true, OK: ok}, obj.Revision)
		}
	}
	show := func(what string, now time.Time) {
		if err := r.step(ctx, "schedules/nightly", nightly, now); err != nil {
			fmt.Println(err)
		}
		objs, _, _ := backups.List(ctx, "backups/nightly/")
		var keys []string
		for _, o := range objs {
			state := map[bool]string{true: "ok", false: "failed"}[o.Value.OK]
			if !o.Value.Done {
				state = "running"
			}
			keys = append(keys, strings.TrimPrefix(o.Key, "backups/nightly/2025")+" "+state)
		}
		fmt.Printf("%-28s %s\n", what+":", strings.Join(keys, ", "))
	}

	show("June 1st, 03:00", at(1, 3))
	finish(1, true)
	show("June 2nd, 03:00", at(2, 3))
	show("June 3rd, 03:00, still busy", at(3, 3))
	finish(2, true)
	show("June 3rd, 05:00, done", at(3, 5)) // the backup's change wakes the schedule
	finish(3, true)
	show("June 9th, after downtime", at(9, 12))
	finish(9, false)
	show("June 10th", at(10, 3))
	finish(10, false)
	show("June 11th", at(11, 3))
	show("June 11th, a retry", at(11, 3))
	finish(11, false)
	show("June 12th", at(12, 3))
	// Output:
	// June 1st, 03:00:             0601T030000Z running
	// June 2nd, 03:00:             0601T030000Z ok, 0602T030000Z running
	// June 3rd, 03:00, still busy: 0601T030000Z ok, 0602T030000Z running
	// June 3rd, 05:00, done:       0602T030000Z ok, 0603T030000Z running
	// June 9th, after downtime:    0603T030000Z ok, 0609T030000Z running
	// June 10th:                   0603T030000Z ok, 0609T030000Z failed, 0610T030000Z running
	// June 11th:                   0603T030000Z ok, 0610T030000Z failed, 0611T030000Z running
	// June 11th, a retry:          0603T030000Z ok, 0610T030000Z failed, 0611T030000Z running
	// June 12th:                   0603T030000Z ok, 0611T030000Z failed, 0612T030000Z running
}

// A spec read in a time zone, across the night clocks spring forward.
func ExampleSchedule_Next() {
	s, err := schedule.Parse("CRON_TZ=Europe/Paris 30 2 * * *", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	t := time.Date(2025, 3, 28, 12, 0, 0, 0, time.UTC)
	for range 3 {
		t = s.Next(t)
		fmt.Println(t.Format("Mon Jan 2 15:04 MST"))
	}
	_, err = schedule.Parse("0 3 * * mon-fry", nil)
	fmt.Println(err)
	// Output:
	// Sat Mar 29 02:30 CET
	// Sun Mar 30 03:00 CEST
	// Mon Mar 31 02:30 CEST
	// schedule: invalid input: "0 3 * * mon-fry": day-of-week: "fry" is neither a number nor a name (sun-sat)
}

// Due finds the one slot to catch up on after downtime.
func ExampleSchedule_Due() {
	s, _ := schedule.Parse("@hourly", nil)
	last := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC) // the newest slot run
	now := time.Date(2025, 6, 1, 15, 30, 0, 0, time.UTC) // down since 10:30
	slot, due := s.Due(last, now)
	fmt.Println(due, slot.Format("15:04"), schedule.SlotKey("backups/hourly/", slot))
	// Output:
	// true 15:00 backups/hourly/20250601T150000Z
}
