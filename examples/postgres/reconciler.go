package main

import (
	"context"
	"errors"
	"time"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/intent"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/reconcile/kit/schedule"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// This file holds the operator's reconcilers written by hand, one per
// kind but Roles and Databases (reconciled by reconcile/kit/external over
// the Worlds of rolesworld.go and databasesworld.go). Each reads the world
// itself, acts, and records what it saw in status with a
// compare-and-swap through its controller (req.Store); each that makes
// something in PostgreSQL or on disk first makes sure its object carries
// its finalizer (resource.Finalize), so that a deletion is never missed.

// scheduleReconciler converges BackupSchedules: at each slot it creates
// the slot's Backup, owned by the schedule, under the slot's key, once
// none of its backups runs; and it deletes the backups retention no longer
// keeps.
type scheduleReconciler struct {
	backups store.Store[*Backup]
	// archive and dir are the WAL archive (nil without one) and the
	// backups' directory, for the retention of base backups.
	archive *walArchive
	dir     string
}

func (r *scheduleReconciler) Reconcile(ctx context.Context, req reconcile.Request[*BackupSchedule]) (reconcile.Result, error) {
	if req.Deleted || req.Deleting {
		return reconcile.Result{}, nil // its backups are collected by the owners' collector
	}
	obj, spec := req.Object, req.Object.Value.Spec
	sched, prefix, err := parseSchedule(req.Key, spec)
	if err != nil {
		return failed(ctx, req.Store, obj, obj.Value.Status.withError(err), "Invalid", reconcile.Terminal(err))
	}
	children, _, err := r.backups.List(ctx, prefix)
	if err != nil {
		return reconcile.Result{}, err
	}
	owner := apistore.Owner{Key: req.Key, UID: obj.CreateRevision}
	runs := childRuns(prefix, owner, children)
	p := planSchedule(sched, retentionOf(spec), runs, time.Now())
	if spec.Method == MethodBase {
		// Base backups are kept by the recovery window, not by count.
		if p.expired, err = r.baseRetentionOf(ctx, spec, runs, time.Now()); err != nil {
			return failed(ctx, req.Store, obj, obj.Value.Status.withError(err), "Error", err)
		}
		p.kept = keptCount(runs, p)
	}
	if p.due {
		// The slot's key makes a second create of it, after a crash or
		// a retry, fail with ErrExists: one backup per slot.
		_, err := r.backups.Create(ctx, schedule.SlotKey(prefix, p.slot), newBackup(BackupSpec{Database: spec.Database, Method: spec.Method}, owner))
		if err != nil && !errors.Is(err, store.ErrExists) {
			return failed(ctx, req.Store, obj, obj.Value.Status.withError(err), "Error", err)
		}
	}
	for _, c := range p.expired {
		_, err := r.backups.Delete(ctx, c.Key, c.revision)
		if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrConflict) {
			return failed(ctx, req.Store, obj, obj.Value.Status.withError(err), "Error", err)
		}
	}
	st := p.status(prefix)
	st.LastVerified = lastVerified(verifiedChildren(children, runs))
	_, err = resource.WriteStatus(ctx, req.Store, obj, st, ready("backing up at the schedule's slots"))
	return reconcile.Result{}, err
}

// backupReconciler converges Backups: one dump of the database, made once
// across crashes by the intent-before-action pattern (reconcile/kit/intent):
// the attempt's intent is recorded in status before its dump starts, and a
// reconcile that finds it pending adopts the attempt if its dump still
// runs, or judges it by its result, instead of dumping again.
type backupReconciler struct {
	dumps dumps
	poll  time.Duration
	// archive, if set, reports the WAL archive's health, shown in the
	// status of a base backup that runs (pg_basebackup waits for it).
	archive func(ctx context.Context) error
}

func (r *backupReconciler) Reconcile(ctx context.Context, req reconcile.Request[*Backup]) (reconcile.Result, error) {
	obj, deleting, err := resource.Finalize(ctx, req, BackupFinalizer, func(ctx context.Context) error {
		return r.dumps.remove(ctx, ownAttempt(req.Key, req.Object.CreateRevision, req.Object.Value.Status.Dump))
	})
	if deleting || err != nil {
		return reconcile.Result{}, err
	}
	if obj.Value.Status.Finished() {
		return reconcile.Result{}, nil // a backup is made once
	}
	spec := obj.Value.Spec
	_, err = spec.method()
	if err := errors.Join(err, checkNames("database", spec.Database)); err != nil {
		st := obj.Value.Status.withError(err)
		st.Phase = BackupFailed
		return failed(ctx, req.Store, obj, st, "Invalid", reconcile.Terminal(err))
	}
	if rec := obj.Value.Status.Dump; rec.ID != "" {
		v := *obj.Value // shared with the cache: changed in a copy
		v.Status.Dump = ownAttempt(req.Key, obj.CreateRevision, rec)
		obj.Value = &v
	}
	once := intent.ForResource[BackupSpec](func(st *BackupStatus) *intent.Record[DumpResult] { return &st.Dump })
	once.Find = r.dumps.find
	once.Act = func(ctx context.Context, id string) (intent.Found[DumpResult], error) {
		return r.dumps.start(ctx, req.Key, id, spec)
	}
	out, err := once.Step(ctx, req.Store, obj)
	if err != nil {
		return reconcile.Result{}, err
	}
	st, cond := backupOutcome(out.Object.Value.Status, out.Record)
	if out.Running && spec.Method == MethodBase && r.archive != nil {
		if err := r.archive(ctx); err != nil {
			cond.Message += "; waiting for the WAL archive: " + err.Error()
		}
	}
	if _, err := resource.WriteStatus(ctx, req.Store, out.Object, st, cond); err != nil {
		return reconcile.Result{}, err
	}
	if out.Running {
		return reconcile.Result{RequeueAfter: r.poll}, nil
	}
	return reconcile.Result{}, nil
}
