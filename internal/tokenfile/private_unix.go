//go:build unix

package tokenfile

import (
	"errors"
	"fmt"
	"io/fs"
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

// private checks that fi is a regular file of this process's user that no
// one else may read or write.
func private(fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return errors.New("is not a regular file")
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("has mode %04o: others may read or change it", perm)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("belongs to user %d, not to user %d", st.Uid, os.Getuid())
	}
	return nil
}
