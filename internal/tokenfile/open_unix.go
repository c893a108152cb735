//go:build unix

package tokenfile

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// openPrivate opens path for reading without following a symbolic link
// and without blocking on a FIFO.
func openPrivate(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%w: %s is a symbolic link: name the file it points to", ErrUnsafe, path)
	}
	return f, err
}
