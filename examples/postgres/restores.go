package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"time"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/intent"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
)

// This file holds the Restore kind: a verified base backup and the WAL
// archive restored into a new cluster, to the backup's restore point or
// to an instant, by a process of its own ("restore-run", restoreshim.go)
// made once across crashes as a backup is (reconcile/kit/intent). The
// cluster's directory is RestoreDir/NAME, NAME the Restore's (a SQL
// identifier), and its port one the operator found free; both are in
// its status. It is left running; deleting the Restore stops it and
// removes its directory.

// Restore is the Restore kind.
type Restore = resource.Resource[RestoreSpec, RestoreStatus]

// RestorePrefix is the Restores' prefix, RestoreFinalizer their
// finalizer: a restored cluster is stopped and removed before its
// Restore goes.
const (
	RestorePrefix    = "restores/"
	RestoreFinalizer = "postgres.converge.dev/restored-cluster"
)

// RestoreSpec says what to restore: the restore point of a Backup
// (method base, verified), or an instant (the newest verified base
// backup before it, and the WAL up to it). Exactly one is set.
type RestoreSpec struct {
	Backup string    `json:"backup,omitempty"`
	Time   time.Time `json:"time,omitzero"`
}

// RestoreStatus is the restore's intent record and outcome.
type RestoreStatus struct {
	Phase BackupPhase                  `json:"phase,omitempty"`
	Run   intent.Record[RestoreResult] `json:"run,omitzero"`
	Error string                       `json:"error,omitempty"`
}

// RestoreResult is what a restore attempt left: the new cluster, running.
type RestoreResult struct {
	OK bool `json:"ok"`
	// DataDir and Port are the new cluster's; Backup the base backup
	// restored; Target the recovery target.
	DataDir       string    `json:"dataDir,omitempty"`
	Port          int       `json:"port,omitempty"`
	Backup        string    `json:"backup,omitempty"`
	Target        string    `json:"target,omitempty"`
	RestoreMillis int64     `json:"restoreMillis,omitempty"`
	Started       time.Time `json:"started,omitzero"`
	Finished      time.Time `json:"finished,omitzero"`
	Error         string    `json:"error,omitempty"`
}

// restorePlan is what a restore attempt runs: the base backup (its
// attempt's ID, recomputed) and the target.
type restorePlan struct {
	backupKey, baseID string
	target            restoreTarget
}

// restoreReconciler converges Restores.
type restoreReconciler struct {
	backups store.Store[*Backup]
	runs    *restoreRunner
	poll    time.Duration
}

func (r *restoreReconciler) Reconcile(ctx context.Context, req reconcile.Request[*Restore]) (reconcile.Result, error) {
	obj, deleting, err := resource.Finalize(ctx, req, RestoreFinalizer, func(ctx context.Context) error {
		return r.runs.remove(ctx, req.Key, ownAttempt(req.Key, req.Object.CreateRevision, req.Object.Value.Status.Run))
	})
	if deleting || err != nil || obj.Value.Status.Phase == BackupSucceeded || obj.Value.Status.Phase == BackupFailed {
		return reconcile.Result{}, err
	}
	name, err := nameOf(RestorePrefix, req.Key)
	var plan restorePlan
	if err == nil {
		plan, err = r.plan(ctx, obj.Value.Spec)
	}
	if err != nil && !obj.Value.Status.Run.Pending() {
		// Not retried until the spec changes (a Restore naming a backup
		// not yet verified is edited, or made again, once it is).
		return failed(ctx, req.Store, obj, obj.Value.Status.withError(err), "Invalid", reconcile.Terminal(err))
	}
	if rec := obj.Value.Status.Run; rec.ID != "" {
		v := *obj.Value // shared with the cache: changed in a copy
		v.Status.Run = ownAttempt(req.Key, obj.CreateRevision, rec)
		obj.Value = &v
	}
	once := intent.ForResource[RestoreSpec](func(st *RestoreStatus) *intent.Record[RestoreResult] { return &st.Run })
	once.Find = r.runs.find
	once.Act = func(ctx context.Context, id string) (intent.Found[RestoreResult], error) {
		if err != nil {
			return intent.Found[RestoreResult]{}, err // its plan no longer holds: not started
		}
		return r.runs.start(ctx, req.Key, id, name, plan)
	}
	out, err := once.Step(ctx, req.Store, obj)
	if err != nil {
		return reconcile.Result{}, err
	}
	st, cond := restoreOutcome(out.Object.Value.Status, out.Record)
	if _, err := resource.WriteStatus(ctx, req.Store, out.Object, st, cond); err != nil || !out.Running {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: r.poll}, nil
}

// plan chooses the base backup and target of spec: the named Backup's
// restore point, or, for an instant, the newest verified base backup
// whose restore point is at or before it. A base backup's ID is
// recomputed from its key, never read from its status.
func (r *restoreReconciler) plan(ctx context.Context, spec RestoreSpec) (restorePlan, error) {
	if (spec.Backup == "") == spec.Time.IsZero() {
		return restorePlan{}, fmt.Errorf("%w: a Restore names a backup or a time, and not both", ErrInvalidSpec)
	}
	if spec.Backup != "" {
		obj, err := r.backups.Get(ctx, spec.Backup)
		if err != nil {
			return restorePlan{}, fmt.Errorf("%w: backup %q: %w", ErrInvalidSpec, spec.Backup, err)
		}
		base, ok := verifiedBase(obj)
		if !ok {
			return restorePlan{}, fmt.Errorf("%w: backup %q is no verified base backup", ErrInvalidSpec, spec.Backup)
		}
		return restorePlan{backupKey: obj.Key, baseID: base, target: restoreTarget{name: base}}, nil
	}
	if spec.Time.After(time.Now()) {
		return restorePlan{}, fmt.Errorf("%w: time %s is in the future", ErrInvalidSpec, spec.Time.Format(time.RFC3339))
	}
	objs, _, err := r.backups.List(ctx, BackupPrefix)
	if err != nil {
		return restorePlan{}, err
	}
	var best restorePlan
	var bestAt time.Time
	for _, obj := range objs {
		base, ok := verifiedBase(obj)
		at := obj.Value.Status.Dump.Result.Base
		if ok && !at.RestorePointTime.After(spec.Time) && at.RestorePointTime.After(bestAt) {
			best, bestAt = restorePlan{backupKey: obj.Key, baseID: base, target: restoreTarget{time: spec.Time}}, at.RestorePointTime
		}
	}
	if best.baseID == "" {
		return restorePlan{}, fmt.Errorf("%w: no verified base backup before %s", ErrInvalidSpec, spec.Time.Format(time.RFC3339))
	}
	return best, nil
}

// verifiedBase returns the attempt ID of obj's base backup, recomputed,
// if its status says a drill verified it.
func verifiedBase(obj store.Object[*Backup]) (string, bool) {
	st := obj.Value.Status
	res := st.Dump.Result
	if st.Phase != BackupSucceeded || !res.OK || res.Base == nil || !res.Base.Verified || obj.Value.Spec.Method != MethodBase {
		return "", false
	}
	id := ownAttempt(obj.Key, obj.CreateRevision, st.Dump).ID
	return id, checkAttemptID(id) == nil
}

// restoreOutcome is the status and Ready condition of a restore whose
// record is rec.
func restoreOutcome(st RestoreStatus, rec intent.Record[RestoreResult]) (RestoreStatus, resource.Condition) {
	st.Run = rec
	switch {
	case !rec.Done:
		st.Phase, st.Error = BackupRunning, ""
		return st, notReady("Running", "the restore runs: attempt "+rec.ID)
	case rec.Result.OK:
		st.Phase, st.Error = BackupSucceeded, ""
		return st, ready(fmt.Sprintf("restored %s to %s: serving on 127.0.0.1:%d", rec.Result.Backup, rec.Result.Target, rec.Result.Port))
	}
	st.Phase, st.Error = BackupFailed, rec.Result.Error
	return st, notReady("Failed", rec.Result.Error)
}

func (s RestoreStatus) withError(err error) RestoreStatus {
	s.Error = err.Error()
	return s
}

// restoreRunner is the world of restores: processes of this program, as
// backups are (dumpRunner), their clusters under dir.
type restoreRunner struct {
	*dumpRunner
	dir string // RestoreDir
}

func (r *restoreRunner) find(ctx context.Context, id string) (intent.Found[RestoreResult], error) {
	found, err := findRun[RestoreResult](r.dumpRunner, id)
	if errors.Is(err, errNoResult) {
		found.Result.Error = "the restore's process ended without a result"
		return found, nil
	}
	return found, err
}

func (r *restoreRunner) start(ctx context.Context, key, id, name string, p restorePlan) (intent.Found[RestoreResult], error) {
	if r.archive == "" || r.dir == "" {
		return intent.Found[RestoreResult]{}, fmt.Errorf("%w: a restore needs the operator's WAL archive (-wal-archive)", ErrInvalidSpec)
	}
	label := p.backupKey
	if !backupLabel.MatchString(label) {
		label = p.baseID // a key of other characters is not put on a command line
	}
	args := []string{restoreCommand, "-id", id, "-name", name, "-base", p.baseID, "-backup", label, "-dir", r.dumpRunner.dir,
		"-bin", r.bin, "-archive", r.archive, "-restore-dir", r.dir, "-user", r.user}
	if p.target.name != "" {
		args = append(args, "-target-name", p.target.name)
	} else {
		args = append(args, "-target-time", p.target.time.UTC().Format(time.RFC3339Nano))
	}
	if err := r.launch(key, id, name, args); err != nil {
		return intent.Found[RestoreResult]{}, err
	}
	return r.find(ctx, id)
}

// backupLabel is a Backup's key as a restore's command line may carry it.
var backupLabel = regexp.MustCompile(`^backups/[A-Za-z0-9._~/:+-]{1,200}$`)

// remove stops the cluster of the Restore at key and removes its
// directory (named by the key, never by a status), then the run's files;
// errDumpRunning while its process runs.
func (r *restoreRunner) remove(ctx context.Context, key string, rec intent.Record[RestoreResult]) error {
	if rec.ID != "" {
		found, err := r.find(ctx, rec.ID)
		if err != nil {
			return err
		}
		if found.State == intent.Running {
			return errDumpRunning
		}
	}
	name, err := nameOf(RestorePrefix, key)
	if err != nil || r.dir == "" {
		return nil // nothing was ever restored for it
	}
	dir := filepath.Join(r.dir, name)
	if err := stopServer(filepath.Join(dir, "data"), syscall.SIGINT); err != nil {
		return err
	}
	errs := []error{os.RemoveAll(dir)}
	if rec.ID != "" {
		errs = append(errs, r.removeRun(rec.ID))
	}
	return errors.Join(errs...)
}
