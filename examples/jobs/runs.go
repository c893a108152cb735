package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/converge-go/converge/internal/atomicfile"
)

// runEnv names the environment variable that carries an attempt's run ID
// into its shim: the shim mode of this program, and how a restarted daemon
// finds the process (findRun).
const runEnv = "CONVERGE_JOBS_RUN"

// runFiles are an attempt's files in the daemon's runs directory:
//
//   - RUNID.claim: created (exclusively) by the shim before it starts the
//     command. A second shim of the same run finds it and runs nothing, so
//     launching a recorded intent again is safe.
//   - RUNID.result: the outcome, written by the shim (atomically, synced)
//     once the command has ended, before the shim exits. It outlives the
//     daemon: an attempt that ended while no daemon ran is judged by it.
//   - RUNID.log: the command's standard output and error.
type runFiles struct{ dir, id string }

func (f runFiles) claim() string  { return filepath.Join(f.dir, f.id+".claim") }
func (f runFiles) result() string { return filepath.Join(f.dir, f.id+".result") }
func (f runFiles) log() string    { return filepath.Join(f.dir, f.id+".log") }

// runResult is what a shim records about its attempt.
type runResult struct {
	// ExitCode is the command's exit status, 128+N if signal N ended it,
	// -1 if it could not be started.
	ExitCode int `json:"exitCode"`
	// TimedOut: the attempt ran past its timeout and was stopped.
	TimedOut bool `json:"timedOut,omitempty"`
	// Stopped: the daemon asked the attempt to stop (shutdown, deletion).
	// The daemon sets it too when it stopped the attempt, whatever the
	// shim recorded.
	Stopped bool `json:"stopped,omitempty"`
	// Error: the command (or its shim) could not be started, and why.
	Error string `json:"error,omitempty"`
	// Lost: the attempt's process ended without recording a result (set by
	// the daemon, never in a file).
	Lost  bool      `json:"-"`
	Ended time.Time `json:"ended"`
}

// ok reports whether the attempt succeeded.
func (r runResult) ok() bool { return r.ExitCode == 0 && !r.TimedOut && r.Error == "" }

// describe says what happened, for Status.Message.
func (r runResult) describe(timeout time.Duration) string {
	switch {
	case r.Error != "":
		return "could not start: " + r.Error
	case r.TimedOut:
		return fmt.Sprintf("timed out after %v (exit code %d)", timeout, r.ExitCode)
	case r.Stopped && r.Lost:
		return "stopped by the daemon; its process ended without recording a result (exit code unknown)"
	case r.Stopped:
		return fmt.Sprintf("stopped by the daemon (exit code %d)", r.ExitCode)
	case r.Lost:
		return "its process ended without recording a result (exit code unknown)"
	case r.ExitCode == 0:
		return "exit code 0"
	default:
		return fmt.Sprintf("exit code %d", r.ExitCode)
	}
}

// claimed reports whether a shim has claimed the run.
func (f runFiles) claimed() bool {
	_, err := os.Stat(f.claim())
	return err == nil
}

// readResult returns the recorded outcome; ok is false if there is none.
func (f runFiles) readResult() (runResult, bool, error) {
	b, err := os.ReadFile(f.result())
	if errors.Is(err, fs.ErrNotExist) {
		return runResult{}, false, nil
	}
	if err != nil {
		return runResult{}, false, err
	}
	var r runResult
	if err := json.Unmarshal(b, &r); err != nil {
		return runResult{}, false, fmt.Errorf("jobs: run %s: damaged result file: %w", f.id, err)
	}
	return r, true, nil
}

// writeResult records r durably: a synced temporary file renamed into place,
// then the directory synced, so the result is whole or absent.
func (f runFiles) writeResult(r runResult) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(f.result(), b, 0o600)
}

// takeClaim creates the claim file, durably; it fails with fs.ErrExist if
// the run was claimed before.
func (f runFiles) takeClaim() error {
	fh, err := os.OpenFile(f.claim(), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(fh, "%d\n", os.Getpid())
	if err == nil {
		err = fh.Sync()
	}
	if err := errors.Join(err, fh.Close()); err != nil {
		return err
	}
	return atomicfile.SyncDir(f.dir)
}
