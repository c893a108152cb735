package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"time"

	"github.com/converge-go/converge/reconcile/kit/intent"
	"github.com/converge-go/converge/reconcile/kit/resource"
)

// This file holds the operator's side of a backup's dump: the world the
// Backup reconciler asks about an attempt (find), acts in (start) and
// cleans (remove). An attempt runs in a process of its own, this program
// run as "backup-run" (dumpshim.go), which outlives the operator: started
// as its attempt by intent.Runs, it runs pg_dump, verifies the dump with
// pg_restore --list, renames it into place and writes its result. So an
// operator killed mid-dump finds, when it starts again, the attempt
// running (Runs.Find: a process still holds it) and adopts it, or finished
// (with its result, or lost) and judges it.

// errDumpRunning: a backup's dump still runs; its files are removed once
// it has ended.
var errDumpRunning = errors.New("postgres: the backup's dump still runs")

// dumps is the world of backups: where an attempt is found by its ID,
// started, and its files removed.
type dumps interface {
	// find says what became of attempt id: Absent if it never started,
	// Running, or Finished with its result.
	find(ctx context.Context, id string) (intent.Found[DumpResult], error)
	// start starts attempt id, the backup spec says for the Backup key,
	// and wakes key when it ends.
	start(ctx context.Context, key, id string, spec BackupSpec) (intent.Found[DumpResult], error)
	// remove removes the files of the attempt rec names; errDumpRunning
	// while it runs.
	remove(ctx context.Context, rec intent.Record[DumpResult]) error
}

// dumpRunner is the dumps of the operator: attempts run as processes of
// this program, their files under dir: the dumps in dir/DATABASE/ID.dump,
// the attempts (intent.Runs) in dir/.runs.
type dumpRunner struct {
	exe string   // this program
	bin string   // PostgreSQL's programs (pg_dump, pg_restore)
	dir string   // where dumps go
	env []string // the libpq environment of the dumps; holds the password
	// For base backups: the WAL archive ("" for none), the directory of
	// the drills' scratch clusters, and the user they run as when root.
	archive, scratch, user string
	wake                   func(key string)
	logs                   io.Writer
	logger                 *slog.Logger

	mu      sync.Mutex
	started map[string]bool // attempts this process started
	told    map[string]bool // attempts of others already logged
	wg      sync.WaitGroup
}

// runs holds the attempts' liveness and results.
func (d *dumpRunner) runs() intent.Runs { return dumpRunnerRuns(d.dir) }

// dumpRunnerRuns is the attempts of the backups' directory dir.
func dumpRunnerRuns(dir string) intent.Runs { return intent.Runs{Dir: filepath.Join(dir, ".runs")} }

func (d *dumpRunner) find(ctx context.Context, id string) (intent.Found[DumpResult], error) {
	found, err := findRun[DumpResult](d, id)
	if errors.Is(err, errNoResult) {
		found.Result.Error = "the dump's process ended without a result"
		return found, nil
	}
	return found, err
}

// findRun says what became of attempt id, a process of d's whose result
// is an R (Runs.Find): Absent if it never started, Running while a process
// holds it, Finished with its result, or Finished with a zero R and
// errNoResult if it ended without one (it was killed).
func findRun[R any](d *dumpRunner, id string) (intent.Found[R], error) {
	if err := checkAttemptID(id); err != nil {
		return intent.Found[R]{}, err
	}
	run, err := d.runs().Find(id)
	switch {
	case err != nil:
		return intent.Found[R]{}, err
	case run.State == intent.Running:
		d.tell(id, "adopting a running dump another operator process started")
		fallthrough
	case run.State == intent.Absent:
		return intent.Found[R]{State: run.State}, nil
	case run.Lost:
		return intent.Found[R]{State: intent.Finished}, errNoResult
	}
	d.tell(id, "judging a dump another operator process started, by its result")
	var res R
	if err := json.Unmarshal(run.Result, &res); err != nil {
		return intent.Found[R]{}, fmt.Errorf("postgres: result of %s: %w", id, err)
	}
	return intent.Found[R]{State: intent.Finished, Result: res}, nil
}

// errNoResult: an attempt's process ended without a result (it was
// killed); findRun's callers judge it failed.
var errNoResult = errors.New("the run's process ended without a result")

func (d *dumpRunner) start(ctx context.Context, key, id string, spec BackupSpec) (intent.Found[DumpResult], error) {
	method, err := spec.method()
	if err = errors.Join(err, checkAttemptID(id), checkNames("database", spec.Database)); err != nil {
		return intent.Found[DumpResult]{}, err
	}
	args := []string{dumpCommand, "-id", id, "-database", spec.Database, "-dir", d.dir, "-bin", d.bin}
	if method == MethodBase {
		if d.archive == "" {
			return intent.Found[DumpResult]{}, fmt.Errorf("%w: a base backup needs the operator's WAL archive (-wal-archive)", ErrInvalidSpec)
		}
		args = append(args, "-method", string(method), "-archive", d.archive, "-scratch", filepath.Join(d.scratch, ".drills"), "-user", d.user)
	}
	if err := d.launch(key, id, spec.Database, args); err != nil {
		return intent.Found[DumpResult]{}, err
	}
	return d.find(ctx, id)
}

// launch runs this program with args as attempt id's process
// (Runs.Start), and wakes key when it ends; an attempt started before,
// by another operator process, is left to it.
func (d *dumpRunner) launch(key, id, what string, args []string) error {
	if err := os.MkdirAll(d.runs().Dir, 0o700); err != nil {
		return err
	}
	cmd := exec.Command(d.exe, args...)
	cmd.Env = append(os.Environ(), d.env...)
	cmd.Stdout, cmd.Stderr = d.logs, d.logs
	// A process group of its own: a ^C or a signal to the operator's group
	// does not cut its dump short; it ends by itself.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err := d.runs().Start(id, cmd)
	if errors.Is(err, intent.ErrStarted) {
		return nil // Find tells what became of it
	}
	if err != nil {
		return fmt.Errorf("postgres: starting the run of %s: %w", what, err)
	}
	d.logger.Info("run started", "key", key, "attempt", id, "args", args[0], "pid", cmd.Process.Pid)
	d.mu.Lock()
	d.started[id] = true
	d.mu.Unlock()
	d.wg.Go(func() {
		_ = cmd.Wait() // its result says how it went
		d.wake(key)
	})
	return nil
}

func (d *dumpRunner) remove(ctx context.Context, rec intent.Record[DumpResult]) error {
	if rec.ID == "" {
		return nil // no attempt was ever recorded
	}
	found, err := d.find(ctx, rec.ID)
	if err != nil {
		return err
	}
	if found.State == intent.Running {
		return errDumpRunning
	}
	var errs []error
	if p := d.dumpOf(rec.ID, found.Result.File); p != "" {
		if err := removeIn(d.dir, p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, d.removeRun(rec.ID))
	// A base backup's directory is named by the ID alone, as its drill's
	// scratch cluster's is, left if its process was killed.
	for _, p := range []string{filepath.Join(".base", rec.ID), filepath.Join(".base", "."+rec.ID+".tmp")} {
		if err := removeAllIn(d.dir, p); err != nil {
			errs = append(errs, err)
		}
	}
	if d.scratch != "" {
		scratch := filepath.Join(d.scratch, ".drills", rec.ID)
		errs = append(errs, stopLeftover(filepath.Join(scratch, "data")), removeAllIn(filepath.Dir(scratch), rec.ID))
	}
	return errors.Join(errs...)
}

// dumpOf returns the path, relative to the backups' directory, of attempt
// id's dump named file by its result, if it is where a dump of id goes
// (DATABASE/ID.dump in that directory), and "" otherwise: a path the
// operator did not make is never removed.
func (d *dumpRunner) dumpOf(id, file string) string {
	if file == "" {
		return ""
	}
	rel, err := filepath.Rel(d.dir, file)
	if err != nil || !filepath.IsLocal(rel) {
		return ""
	}
	db, name := filepath.Split(rel)
	if name != id+".dump" || checkNames("database", filepath.Clean(db)) != nil {
		return ""
	}
	return rel
}

// removeIn removes the file at rel inside dir, never outside it: a
// symbolic link on the way that leads out is an error (os.Root).
func removeIn(dir, rel string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	return root.Remove(rel)
}

// removeAllIn removes the tree at rel inside dir, never outside it.
func removeAllIn(dir, rel string) error {
	root, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer root.Close()
	return root.RemoveAll(rel)
}

// checkAttemptID returns an error matching ErrInvalidSpec unless id is
// spelled as intent.ID spells one (A-Z a-z 0-9 . _ - ~, not "." or ".."):
// a file name in the runs directory (intent.Runs), and one argument.
func checkAttemptID(id string) error {
	if !attemptID.MatchString(id) || id == "." || id == ".." {
		return fmt.Errorf("%w: attempt ID %q is not one the operator makes", ErrInvalidSpec, id)
	}
	return nil
}

var attemptID = regexp.MustCompile(`^[A-Za-z0-9._~-]{1,128}$`)

// ownAttempt returns rec, the dump record in the status of the Backup at
// key made at createRevision, with its ID recomputed from what names it
// (intent.ID of the key, the incarnation, the generation and the attempt's
// number), never taken from the status: whoever holds a token may write
// the status, and an ID names files the operator removes.
func ownAttempt[R any](key string, createRevision int64, rec intent.Record[R]) intent.Record[R] {
	if rec.ID != "" {
		rec.ID = intent.ID(key, createRevision, rec.Generation, rec.Attempt)
	}
	return rec
}

// tell logs, once per attempt, what this process makes of an attempt it
// did not start: another operator process (one killed, say) started it.
func (d *dumpRunner) tell(id, what string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.started[id] || d.told[id+what] {
		return
	}
	d.told[id+what] = true
	d.logger.Info(what, "attempt", id)
}

// wait waits for the dumps this process started to end.
func (d *dumpRunner) wait() { d.wg.Wait() }

// removeRun forgets ended attempt id (intent.Runs.Remove: its files, in
// the runs directory only); a running one is kept (intent.ErrRunning).
func (d *dumpRunner) removeRun(id string) error { return d.runs().Remove(id) }

// backupOutcome is the status and Ready condition of a backup whose dump
// record is rec.
func backupOutcome(st BackupStatus, rec intent.Record[DumpResult]) (BackupStatus, resource.Condition) {
	st.Dump = rec
	switch {
	case !rec.Done:
		st.Phase, st.Error = BackupRunning, ""
		return st, notReady("Running", "the backup runs: attempt "+rec.ID)
	case rec.Result.OK && rec.Result.Base != nil && rec.Result.Base.Verified:
		b := rec.Result.Base
		st.Phase, st.Error = BackupSucceeded, ""
		return st, ready(fmt.Sprintf("base backup of %d bytes restored to %s (%s) in %v, %d rows as recorded",
			rec.Result.Bytes, b.RestorePoint, b.RestorePointTime.Format(time.RFC3339), time.Duration(b.RestoreMillis)*time.Millisecond, b.Rows))
	case rec.Result.OK && rec.Result.Base == nil:
		st.Phase, st.Error = BackupSucceeded, ""
		return st, ready(fmt.Sprintf("%s: %d bytes, %d entries verified", rec.Result.File, rec.Result.Bytes, rec.Result.Entries))
	default:
		st.Phase, st.Error = BackupFailed, rec.Result.Error
		return st, notReady("Failed", rec.Result.Error)
	}
}
