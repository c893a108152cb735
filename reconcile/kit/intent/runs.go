package intent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ErrStarted matches the error of a Start or Hold of an attempt that was
// started before (its lock file exists): an attempt runs once.
var ErrStarted = errors.New("intent: the attempt was started before")

// ErrRunning matches the error of a Remove of an attempt that still runs.
var ErrRunning = errors.New("intent: the attempt still runs")

// ResultEnv names the environment variable through which Runs.Start tells
// an attempt's process where its result goes (WriteResult writes it).
const ResultEnv = "CONVERGE_INTENT_RESULT"

// Runs keeps the attempts of side effects in a directory so that any
// process, after any crash, can tell a running attempt from a dead one,
// without claim files of its own: each attempt holds, for as long as it
// runs, an exclusive lock (flock) on a file named for its ID, which the
// kernel releases when the last process holding it ends, by SIGKILL
// too. Its result, if it leaves one, is a file written whole (WriteFile),
// read back by Find. So Once's Find is Runs.Find and its Act is
// Runs.Start (or Hold, for work done in process).
//
// Attempts are named by their IDs (see ID: safe as file names). A Runs is
// a value naming its directory, which must exist; its methods are safe
// for concurrent use and across processes. It needs flock (unix); elsewhere
// its methods fail with errors.ErrUnsupported.
type Runs struct {
	Dir string
}

// Run is what Find says of an attempt.
type Run struct {
	// State is Absent (never started), Running (a process holds its
	// lock) or Finished (none does).
	State State
	// Result is the result the attempt wrote (WriteResult), when
	// Finished; Lost reports a finished attempt that wrote none: it was
	// killed, or crashed, before it could.
	Result []byte
	Lost   bool
}

func (r Runs) paths(id string) (lock, result string, err error) {
	if r.Dir == "" || id == "" || strings.ContainsAny(id, `/\`) || id == "." || id == ".." {
		return "", "", fmt.Errorf("%w: Runs %q: attempt %q: want a directory and an ID (see ID)", ErrInvalid, r.Dir, id)
	}
	base := filepath.Join(r.Dir, id)
	return base + ".lock", base + ".result", nil
}

// Start starts cmd as attempt id, once: it creates the attempt's lock
// file already locked (a second Start or Hold of id fails with
// ErrStarted), hands the lock to cmd as an extra file (cmd, and any
// process it starts that keeps the file, hold it until they end), sets
// ResultEnv in cmd's environment, starts cmd, marks the lock file as
// started and only then lets go of its own copy of the lock. The caller
// waits for cmd as usual; whether it does or not, and whether the caller
// lives or not, Find tells the attempt's state.
//
// An attempt whose process never started (cmd.Start failed, or the
// caller was killed before it returned) is left unmarked: Find says
// Absent, and a later Start of id takes its lock file over and runs it.
// So does one whose caller was killed after cmd started and before the
// mark, if cmd then also ended without a result: two faults within the
// same instant, the one case where an attempt may run twice.
func (r Runs) Start(id string, cmd *exec.Cmd) error {
	lockPath, resultPath, err := r.paths(id)
	if err != nil {
		return err
	}
	f, err := createLocked(lockPath)
	if errors.Is(err, ErrStarted) {
		f, err = takeOverUnstarted(lockPath, resultPath)
	}
	if err != nil {
		return err
	}
	defer f.Close() // the child keeps its own copy
	cmd.ExtraFiles = append(cmd.ExtraFiles, f)
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, ResultEnv+"="+resultPath)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("intent: start attempt %s: %w", id, err)
	}
	if err := markStarted(f); err != nil {
		return fmt.Errorf("intent: attempt %s started, but not marked so: %w", id, err)
	}
	return nil
}

// Hold marks attempt id as running in this process, once (a second Start
// or Hold fails with ErrStarted), until release is called or the process
// ends: for a side effect made in process. Write its result with
// WriteFile at ResultPath before calling release.
func (r Runs) Hold(id string) (release func() error, err error) {
	lockPath, resultPath, err := r.paths(id)
	if err != nil {
		return nil, err
	}
	f, err := createLocked(lockPath)
	if errors.Is(err, ErrStarted) {
		f, err = takeOverUnstarted(lockPath, resultPath)
	}
	if err != nil {
		return nil, err
	}
	if err := markStarted(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("intent: hold attempt %s: %w", id, err)
	}
	return f.Close, nil
}

// ResultPath returns the path of attempt id's result file.
func (r Runs) ResultPath(id string) (string, error) {
	_, p, err := r.paths(id)
	return p, err
}

// Find says what became of attempt id: Absent if it was never started
// (or its process never started: see Start), Running while a process
// holds its lock, else Finished, with the result it wrote or Lost. It
// reads the lock before the result, so an attempt that wrote its result
// and then ended is never taken for lost.
func (r Runs) Find(id string) (Run, error) {
	lockPath, resultPath, err := r.paths(id)
	if err != nil {
		return Run{}, err
	}
	f, err := os.Open(lockPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Run{State: Absent}, nil
	case err != nil:
		return Run{}, fmt.Errorf("intent: find attempt %s: %w", id, err)
	}
	defer f.Close()
	held, err := heldElsewhere(f)
	if err != nil {
		return Run{}, fmt.Errorf("intent: find attempt %s: %w", id, err)
	}
	if held {
		return Run{State: Running}, nil
	}
	data, err := os.ReadFile(resultPath)
	switch {
	case err == nil:
		return Run{State: Finished, Result: data}, nil
	case !errors.Is(err, fs.ErrNotExist):
		return Run{}, fmt.Errorf("intent: read the result of attempt %s: %w", id, err)
	}
	started, err := markedStarted(f)
	switch {
	case err != nil:
		return Run{}, fmt.Errorf("intent: find attempt %s: %w", id, err)
	case !started:
		return Run{State: Absent}, nil // its process never started
	}
	return Run{State: Finished, Lost: true}, nil
}

// Remove forgets attempt id once it has finished: its result, then its
// lock file, are removed, and Find says Absent again (so a later Start of
// id runs it anew: remove an attempt only once nothing will ask for it).
// An attempt that still runs is left as it is, with an error matching
// ErrRunning; one never started, or removed before, is no error. A crash
// between the two steps leaves the attempt Finished and Lost.
func (r Runs) Remove(id string) error {
	lockPath, resultPath, err := r.paths(id)
	if err != nil {
		return err
	}
	run, err := r.Find(id)
	switch {
	case err != nil:
		return err
	case run.State == Running:
		return fmt.Errorf("%w: remove attempt %s", ErrRunning, id)
	}
	for _, p := range []string{resultPath, lockPath} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("intent: remove attempt %s: %w", id, err)
		}
	}
	return nil
}

// WriteResult writes data as the result of the attempt this process runs
// (its ResultEnv), whole or not at all (WriteFile). Outside an attempt
// started by Runs.Start it fails with ErrInvalid.
func WriteResult(data []byte) error {
	path := os.Getenv(ResultEnv)
	if path == "" {
		return fmt.Errorf("%w: WriteResult: %s is not set: not an attempt started by Runs.Start", ErrInvalid, ResultEnv)
	}
	return WriteFile(path, data, 0o600)
}

// createLocked makes path, exclusively, as a file already locked: the
// lock is taken on a temporary file, which is then linked to path (an
// exclusive, atomic step), so no one ever sees path unlocked before its
// attempt ends.
func createLocked(path string) (*os.File, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".lock-*")
	if err != nil {
		return nil, fmt.Errorf("intent: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := lockExclusive(tmp); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("intent: lock %s: %w", path, err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		tmp.Close()
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("%w: %s", ErrStarted, filepath.Base(path))
		}
		return nil, fmt.Errorf("intent: %w", err)
	}
	return tmp, nil
}
