package main

import (
	"fmt"
	"slices"
	"time"

	"github.com/converge-go/converge/reconcile/kit/schedule"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// This file holds what a BackupSchedule's reconcile decides, as a pure
// function of its schedule, its backups and the time (planSchedule), and
// the pieces around it: the schedule's parsing, its children and the
// Backup it makes for a slot.

// childRun is a backup of a schedule, as its reconcile sees it.
type childRun struct {
	schedule.Run
	revision int64
	// deleting: marked for deletion, its dump file being removed. It
	// still counts for the slots run and as running, not for retention.
	deleting bool
}

// plan is what a schedule's reconcile does now, and what it reports.
type plan struct {
	// due: create the backup of slot.
	due  bool
	slot time.Time
	// expired are the backups retention no longer keeps, oldest first.
	expired []childRun
	// last is the newest slot that has a backup (slot, once due), next
	// the one after now.
	last, next time.Time
	// running is the key of the backup not finished, if any (the one
	// due is named by status, which knows the keys' prefix);
	// lastSucceeded that of the newest success; kept counts the backups
	// kept.
	running, lastSucceeded string
	kept                   int
}

// planSchedule decides, at now, for a schedule whose backups are children
// (in slot order): the latest slot since the newest backup is due unless a
// backup still runs (at most one at a time; after downtime over several
// slots, only the latest: one catch-up), and retention deletes the oldest
// finished backups beyond what keep says, never the newest success,
// however many newer backups failed.
func planSchedule(sched schedule.Schedule, keep schedule.Retention, children []childRun, now time.Time) plan {
	p := plan{next: sched.Next(now)}
	var kept []schedule.Run
	for _, c := range children {
		p.last = c.Slot
		if !c.Finished && p.running == "" {
			p.running = c.Key
		}
		if !c.deleting {
			kept = append(kept, c.Run)
		}
	}
	if slot, due := sched.Due(p.last, now); due && p.running == "" {
		p.due, p.slot, p.last = true, slot, slot
	}
	expired := keep.Expired(kept)
	for _, c := range children {
		if slices.Contains(expired, c.Key) {
			p.expired = append(p.expired, c)
		}
	}
	for _, r := range kept {
		if slices.Contains(expired, r.Key) {
			continue
		}
		p.kept++
		if r.Finished && r.Succeeded {
			p.lastSucceeded = r.Key
		}
	}
	if p.due {
		p.kept++
	}
	return p
}

// status is the schedule's status the plan shows; prefix is the
// schedule's backups' prefix.
func (p plan) status(prefix string) BackupScheduleStatus {
	running := p.running
	if p.due {
		running = schedule.SlotKey(prefix, p.slot)
	}
	return BackupScheduleStatus{LastSlot: p.last, NextSlot: p.next, Running: running,
		LastSucceeded: p.lastSucceeded, Backups: p.kept}
}

// parseSchedule reads a schedule's spec and returns its schedule and the
// prefix of its backups' keys ("backups/NAME/"), or an error matching
// ErrInvalidSpec.
func parseSchedule(key string, spec BackupScheduleSpec) (schedule.Schedule, string, error) {
	name, err := nameOf(SchedulePrefix, key)
	if err != nil {
		return schedule.Schedule{}, "", err
	}
	if err := checkNames("database", spec.Database); err != nil {
		return schedule.Schedule{}, "", err
	}
	if _, err := (BackupSpec{Method: spec.Method}).method(); err != nil {
		return schedule.Schedule{}, "", err
	}
	if _, err := parseWindow(spec.RecoveryWindow); err != nil {
		return schedule.Schedule{}, "", err
	}
	if spec.KeepSucceeded < 0 || spec.KeepFailed < 0 {
		return schedule.Schedule{}, "", fmt.Errorf("%w: keepSucceeded and keepFailed cannot be negative", ErrInvalidSpec)
	}
	sched, err := schedule.Parse(spec.Schedule, nil)
	if err != nil {
		return schedule.Schedule{}, "", fmt.Errorf("%w: %w", ErrInvalidSpec, err)
	}
	return sched, BackupPrefix + name + "/", nil
}

// retentionOf is a schedule's retention; it keeps the newest success
// alone by default.
func retentionOf(spec BackupScheduleSpec) schedule.Retention {
	return schedule.Retention{Succeeded: max(spec.KeepSucceeded, 1), Failed: spec.KeepFailed}
}

// childRuns returns the backups under prefix that owner owns, as runs, in
// slot order: a backup made by hand under the prefix, or by an earlier
// schedule of the same name, is not the schedule's.
func childRuns(prefix string, owner apistore.Owner, children []store.Object[*Backup]) []childRun {
	var out []childRun
	for _, c := range children {
		slot, ok := schedule.SlotOf(prefix, c.Key)
		if !ok || !slices.ContainsFunc(c.Value.Owners, func(o apistore.Owner) bool { return o.Key == owner.Key && o.UID == owner.UID }) {
			continue
		}
		st := c.Value.Status
		out = append(out, childRun{
			Run:      schedule.Run{Key: c.Key, Slot: slot, Finished: st.Finished(), Succeeded: st.Phase == BackupSucceeded},
			revision: c.Revision,
			deleting: c.Value.Deleting(),
		})
	}
	slices.SortFunc(out, func(a, b childRun) int { return a.Slot.Compare(b.Slot) })
	return out
}

// newBackup is the Backup of a slot: owned by its schedule (the owners'
// collector deletes it with the schedule; Block makes a foreground
// deletion of the schedule wait for it), with its finalizer from the
// start.
func newBackup(spec BackupSpec, owner apistore.Owner) *Backup {
	owner.Block = true
	b := &Backup{Spec: spec}
	b.Owners = []apistore.Owner{owner}
	b.Finalizers = []string{BackupFinalizer}
	return b
}

// keptCount counts the backups of runs p keeps, the one due included.
func keptCount(runs []childRun, p plan) int {
	n := 0
	for _, c := range runs {
		if !c.deleting && !slices.ContainsFunc(p.expired, func(e childRun) bool { return e.Key == c.Key }) {
			n++
		}
	}
	if p.due {
		n++
	}
	return n
}

// verifiedChildren are the finished backups among children that runs
// names (the schedule's own), with their results.
func verifiedChildren(children []store.Object[*Backup], runs []childRun) []verifiedCandidate {
	var out []verifiedCandidate
	for _, c := range children {
		if rec := c.Value.Status.Dump; rec.Done && slices.ContainsFunc(runs, func(r childRun) bool { return r.Key == c.Key }) {
			out = append(out, verifiedCandidate{c.Key, rec.Result})
		}
	}
	return out
}
