package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/converge-go/converge/store"
)

// This file holds the retention of base backups and of the WAL archive:
// which base backups a schedule deletes and which WAL segments go, as a
// pure function (retainBase) of the backups, the archive's segments and
// the recovery window, so that every instant inside the window stays
// restorable; and its wiring into a schedule's reconcile.

// baseRun is a base backup as retention sees it.
type baseRun struct {
	Key string
	// Own: a backup of the schedule deciding, which it may delete; the
	// others' (other schedules', by hand) only hold WAL.
	Own      bool
	Finished bool
	Verified bool
	// Ready is its restore point's time: an instant from Ready on is
	// restored from it with the WAL from StartWAL on.
	Ready    time.Time
	StartWAL string
}

// baseRetention is what retainBase decides.
type baseRetention struct {
	// Expired are the keys of own backups to delete.
	Expired []string
	// Segments are the WAL segments to remove from the archive.
	Segments []string
}

// retainBase decides, for a recovery window starting at windowStart, which
// base backups and WAL segments go. It keeps every own verified backup
// whose restore point is inside the window, the one at or before its
// start whose WAL starts last (from which the window's first instants
// restore with the least WAL), the newest
// keepVerified (at least one) and the newest keepFailed finished and not
// verified; a backup not finished is never deleted. It removes the
// segments before the first one any backup kept and verified needs, and
// none while a base backup runs (the WAL it needs is not yet known) or
// when none is verified. So every instant from windowStart on that was
// restorable stays restorable.
func retainBase(runs []baseRun, segments []string, windowStart time.Time, keepVerified, keepFailed int) baseRetention {
	var out baseRetention
	var verified, unverified []baseRun
	for _, r := range runs {
		switch {
		case !r.Own || !r.Finished:
		case r.Verified:
			verified = append(verified, r)
		default:
			unverified = append(unverified, r)
		}
	}
	byReady := func(a, b baseRun) int { return a.Ready.Compare(b.Ready) }
	slices.SortStableFunc(verified, byReady)
	slices.SortStableFunc(unverified, byReady)
	// The anchor restores the window's first instants: of the verified
	// backups at or before its start, the one whose WAL starts last (the
	// newest, unless backups overlapped), since any of the others needs
	// all of its WAL and more.
	anchor := -1
	for i, r := range verified {
		if !r.Ready.After(windowStart) && (anchor < 0 || segmentNumber(r.StartWAL) >= segmentNumber(verified[anchor].StartWAL)) {
			anchor = i
		}
	}
	for i, r := range verified {
		if !r.Ready.After(windowStart) && i != anchor && i < len(verified)-max(keepVerified, 1) {
			out.Expired = append(out.Expired, r.Key)
		}
	}
	for i, r := range unverified {
		if i < len(unverified)-keepFailed {
			out.Expired = append(out.Expired, r.Key)
		}
	}
	out.Segments = removableSegments(runs, out.Expired, segments)
	return out
}

// removableSegments are the segments before the first one a kept,
// verified base backup needs; none while one runs, or none is verified.
func removableSegments(runs []baseRun, expired, segments []string) []string {
	cut := ""
	for _, r := range runs {
		switch {
		case !r.Finished:
			return nil
		case !r.Verified || slices.Contains(expired, r.Key):
		case checkSegment(r.StartWAL) != nil:
			return nil // what it needs is unknown: remove nothing
		case cut == "" || segmentNumber(r.StartWAL) < segmentNumber(cut):
			cut = r.StartWAL
		}
	}
	if cut == "" {
		return nil
	}
	var out []string
	for _, s := range segments {
		if checkSegment(s) == nil && segmentNumber(s) < segmentNumber(cut) {
			out = append(out, s)
		}
	}
	return out
}

// segmentNumber is a segment's position in the WAL, whatever its
// timeline: its name without the timeline's eight digits ("" for a name
// that is not a segment's: before every segment).
func segmentNumber(seg string) string {
	if checkSegment(seg) != nil {
		return ""
	}
	return seg[8:]
}

// parseWindow reads a schedule's recovery window ("" is none).
func parseWindow(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%w: recoveryWindow %q: want a duration such as 168h", ErrInvalidSpec, s)
	}
	return d, nil
}

// baseRetentionOf applies retainBase for a schedule whose own backups
// are children: it returns those to delete and removes the WAL segments
// no kept backup needs from the archive. Every base backup in the store
// (other schedules', by hand) holds the WAL it needs; a base backup's
// first segment is read from its own backup_label, never from a status.
func (r *scheduleReconciler) baseRetentionOf(ctx context.Context, spec BackupScheduleSpec, children []childRun, now time.Time) ([]childRun, error) {
	window, err := parseWindow(spec.RecoveryWindow)
	if err != nil || r.archive == nil {
		return nil, err
	}
	all, _, err := r.backups.List(ctx, BackupPrefix)
	if err != nil {
		return nil, err
	}
	own := map[string]bool{}
	for _, c := range children {
		own[c.Key] = !c.deleting
	}
	var runs []baseRun
	for _, obj := range all {
		if obj.Value.Spec.Method != MethodBase || obj.Value.Deleting() && !own[obj.Key] {
			continue
		}
		runs = append(runs, r.baseRunOf(obj, own[obj.Key]))
	}
	segs, err := r.archive.segments()
	if err != nil {
		return nil, err
	}
	dec := retainBase(runs, segs, now.Add(-window), spec.KeepSucceeded, spec.KeepFailed)
	if err := r.archive.remove(dec.Segments); err != nil {
		return nil, err
	}
	var expired []childRun
	for _, c := range children {
		if slices.Contains(dec.Expired, c.Key) {
			expired = append(expired, c)
		}
	}
	return expired, nil
}

// baseRunOf is the backup obj as retention sees it.
func (r *scheduleReconciler) baseRunOf(obj store.Object[*Backup], own bool) baseRun {
	st := obj.Value.Status
	run := baseRun{Key: obj.Key, Own: own, Finished: st.Finished()}
	if b := st.Dump.Result.Base; st.Phase == BackupSucceeded && b != nil && b.Verified {
		run.Verified, run.Ready = true, b.RestorePointTime
		id := ownAttempt(obj.Key, obj.CreateRevision, st.Dump).ID
		if checkAttemptID(id) == nil {
			run.StartWAL, _ = readStartWAL(baseDir(r.dir, id))
		}
	}
	return run
}
