//go:build !unix

package tokenfile

import (
	"errors"
	"io/fs"
	"os"
)

// openPrivate opens path for reading.
func openPrivate(path string) (*os.File, error) { return os.Open(path) }

// private checks that fi is a regular file; file ownership is not checked
// on this system.
func private(fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return errors.New("is not a regular file")
	}
	return nil
}
