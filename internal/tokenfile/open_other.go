//go:build !unix

package tokenfile

import "os"

// openPrivate opens path for reading.
func openPrivate(path string) (*os.File, error) { return os.Open(path) }
