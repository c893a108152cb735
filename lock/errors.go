package lock

import (
	"context"
	"errors"
	"fmt"

	"github.com/converge-go/converge/internal/invalid"
	"github.com/converge-go/converge/internal/running"
)

// Errors of package lock. Test for them with errors.Is: they are wrapped with
// detail (the key, the store error behind a loss).
var (
	// ErrInvalid: bad input (a nil context, store or function, an invalid
	// lease key, inconsistent options, a Lease not made by NewLease).
	// errors.Is matches it with the ErrInvalid of every converge package.
	ErrInvalid error = invalid.New("lock")
	// ErrAlreadyRunning: Elector.Run called while another Run of the same
	// Elector is in progress. errors.Is matches it with the
	// ErrAlreadyRunning of every converge package
	// (reconcile.ErrAlreadyRunning included).
	ErrAlreadyRunning error = running.New("lock")
	// ErrNotLocked: Keyed.Unlock of a key that is not locked.
	ErrNotLocked = errors.New("lock: key is not locked")
	// ErrLost: leadership is in doubt (a renewal failed past the renew
	// deadline, the record was changed or deleted by someone else). It is
	// the cause (context.Cause) of a lost Lock's context.
	ErrLost = errors.New("lock: lease lost")
	// ErrReleased: the holder released the lease. It is the cause
	// (context.Cause) of a released Lock's context.
	ErrReleased = errors.New("lock: lease released")
)

// checkContext refuses a nil context instead of letting it panic later.
func checkContext(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context", ErrInvalid)
	}
	return nil
}
