// Package dependency follows the health of the external systems a program
// acts on (the PostgreSQL server an operator manages, a message broker): a
// Set checks each Dependency every Interval and reports one whose checks
// keep failing as down, until a check succeeds again.
//
// A reconcile.Controller with Options.Dependencies runs a Set while it
// runs: it is unready while a dependency is down, holds its keys in its
// queue instead of reconciling them against the dead system (a circuit),
// and retries them at once when the dependency is back. A
// manager.Manager with Options.Dependencies is unready meanwhile.
//
// # Guarantees
//
//   - A dependency whose checks start failing is down within
//     (FailureThreshold+1) × Interval, 20 seconds by default (within
//     FailureThreshold × Interval when the checks fail at once), and up
//     again at its first successful check, within one Interval of
//     serving again. Each check's context ends after Interval: a check
//     that takes longer fails.
//   - A caller that sees a dependency fail marks its error with Down;
//     Set.Blame then takes the dependency down at once, before its next
//     check, and the next successful check brings it back up.
//   - Set.States reports every dependency: up or down, since when, its
//     consecutive failures and the latest error. Set.Err is nil while
//     every one is up, else it names each one down and matches ErrDown.
//   - Set.Watch tells when the set goes from all up to one down and back,
//     without polling.
//   - Run leaves no goroutine behind; a check that panics fails.
//   - Bad input (a dependency without a name or a check, two with one
//     name, a negative interval or threshold) is an error matching
//     ErrInvalid, never a panic. The zero Set has no dependencies.
package dependency

import (
	"context"
	"errors"
	"time"

	"github.com/converge-go/converge/internal/invalid"
)

// Defaults of a Dependency's zero fields.
const (
	DefaultInterval         = 5 * time.Second
	DefaultFailureThreshold = 3
)

// Errors of the package. Test for them with errors.Is.
var (
	// ErrDown matches the errors of Down and of Set.Err: a dependency is
	// down.
	ErrDown = errors.New("dependency: down")
	// ErrInvalid matches the errors of NewSet for bad dependencies, and
	// the ErrInvalid of every converge package.
	ErrInvalid error = invalid.New("dependency")
	// ErrAlreadyRunning is returned by Set.Run called while the set runs.
	ErrAlreadyRunning = errors.New("dependency: set already running")
)

// Dependency is an external system a program needs, and how to tell
// whether it serves. Name and Check are required; the other fields have
// working zero values.
type Dependency struct {
	// Name identifies the dependency in health reports, errors, metrics
	// and Down ("postgres").
	Name string
	// Check returns nil while the dependency serves (a ping, a
	// "SELECT 1"). It must return when its context ends, which it does
	// after Interval. It is called from one goroutine at a time.
	Check func(ctx context.Context) error
	// Interval is how often Check is called (default DefaultInterval), the
	// first time when the Set starts running.
	Interval time.Duration
	// FailureThreshold is how many consecutive failed checks make the
	// dependency down (default DefaultFailureThreshold). One successful
	// check makes it up.
	FailureThreshold int
}

// State is what a Set knows of one dependency.
type State struct {
	Name string
	// Down: FailureThreshold consecutive checks failed, or a caller blamed
	// the dependency (Set.Blame), and no check has succeeded since.
	Down bool
	// Since is when the dependency went down, or came back up; for one
	// never down, when the Set was made.
	Since time.Time
	// Failures counts the failed checks and blames since the latest
	// successful check.
	Failures int
	// LastError is the error of the latest failed check or blame, kept
	// after the dependency is up again ("" if none ever failed).
	LastError string
	// Checked is when the latest check ended (zero before the first).
	Checked time.Time
}

// Down marks err as caused by the dependency named name being down: a
// reconciler returns it so that its controller takes the dependency down
// at once (Set.Blame) and holds its keys until a check succeeds. The error
// matches ErrDown and err under errors.Is. Down returns nil for a nil err.
func Down(name string, err error) error {
	if err == nil {
		return nil
	}
	return &downError{name: name, err: err}
}

// downError is an error marked by Down.
type downError struct {
	name string
	err  error
}

func (e *downError) Error() string   { return "dependency: down: " + e.name + ": " + e.err.Error() }
func (e *downError) Unwrap() []error { return []error{ErrDown, e.err} }

// blamed returns the name of the dependency err was marked with by Down,
// ok false if it was not.
func blamed(err error) (name string, cause error, ok bool) {
	var d *downError
	if !errors.As(err, &d) {
		return "", nil, false
	}
	return d.name, d.err, true
}
