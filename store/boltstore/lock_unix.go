//go:build unix

package boltstore

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// lockRetry is how often lockFile tries again while another holds the file.
const lockRetry = 50 * time.Millisecond

// lockFile takes the exclusive lock bbolt takes, on f's open file
// description, waiting up to timeout. bbolt, handed the same *os.File,
// then takes it again at once, so the file stays locked from before it is
// verified until Close. It reports errLockTimeout when the wait runs out.
func lockFile(f *os.File, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, syscall.EWOULDBLOCK):
			return &os.PathError{Op: "flock", Path: f.Name(), Err: err}
		case !time.Now().Before(deadline):
			return errLockTimeout
		}
		time.Sleep(lockRetry)
	}
}
