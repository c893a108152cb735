package intent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// This file holds the mark that tells an attempt whose process started
// from one whose starter died before it could start it: the lock file is
// created empty, and written (startedMark) once the attempt's process
// runs, by the process that started it and still holds the lock.

// startedMark is the lock file's content once its attempt's process has
// started.
const startedMark = "started\n"

// markStarted marks f, the attempt's lock file, as started, durably.
func markStarted(f *os.File) error {
	if _, err := f.WriteAt([]byte(startedMark), 0); err != nil {
		return err
	}
	return f.Sync()
}

// markedStarted reports whether f, an attempt's lock file, is marked as
// started.
func markedStarted(f *os.File) (bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	return fi.Size() > 0, nil
}

// takeOverUnstarted locks the existing lock file at lockPath for a new
// start of its attempt, if no process holds it, it is not marked as
// started and no result is written: its process never started. Else it
// fails with ErrStarted.
func takeOverUnstarted(lockPath, resultPath string) (*os.File, error) {
	started := fmt.Errorf("%w: %s", ErrStarted, filepath.Base(lockPath))
	f, err := os.OpenFile(lockPath, os.O_RDWR, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, started // removed meanwhile: a later Start creates it
	case err != nil:
		return nil, fmt.Errorf("intent: %w", err)
	}
	if err := lockExclusive(f); err != nil {
		f.Close()
		if errors.Is(err, errors.ErrUnsupported) {
			return nil, err
		}
		return nil, started // a process holds it
	}
	if ok, err := stillUnstarted(f, lockPath, resultPath); !ok || err != nil {
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("intent: %w", err)
		}
		return nil, started
	}
	return f, nil
}

// stillUnstarted reports whether f, locked, is still the file at lockPath
// (not removed and made again meanwhile), unmarked, and without a result.
func stillUnstarted(f *os.File, lockPath, resultPath string) (bool, error) {
	held, err := f.Stat()
	if err != nil {
		return false, err
	}
	now, err := os.Stat(lockPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, err
	case !os.SameFile(held, now) || held.Size() > 0:
		return false, nil
	}
	_, err = os.Stat(resultPath)
	switch {
	case err == nil:
		return false, nil
	case errors.Is(err, fs.ErrNotExist):
		return true, nil
	}
	return false, err
}
