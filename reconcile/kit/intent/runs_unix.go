//go:build unix

package intent

import (
	"errors"
	"os"
	"syscall"
)

// lockExclusive takes f's exclusive lock, without waiting.
func lockExclusive(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// heldElsewhere reports whether another open file description holds f's
// lock: a process runs the attempt.
func heldElsewhere(f *os.File) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	switch {
	case err == nil:
		return false, syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	case errors.Is(err, syscall.EWOULDBLOCK):
		return true, nil
	}
	return false, err
}
