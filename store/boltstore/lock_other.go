//go:build !unix

package boltstore

import (
	"os"
	"time"
)

// lockFile does nothing where flock is missing: bbolt locks the file
// itself, after it has been verified.
func lockFile(*os.File, time.Duration) error { return nil }
