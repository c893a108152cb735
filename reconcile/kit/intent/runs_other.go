//go:build !unix

package intent

import (
	"errors"
	"os"
)

func lockExclusive(*os.File) error { return errors.ErrUnsupported }

func heldElsewhere(*os.File) (bool, error) { return false, errors.ErrUnsupported }
