// Package dependency follows the health of the external systems a program
// acts on (the PostgreSQL server an operator manages, a message broker): a
// Dependency is checked every Interval and is down once its checks keep
// failing, until a check succeeds again; a Set is the group of
// dependencies one part of the program needs.
//
// A reconcile.Controller with Options.Dependencies runs a Set while it
// runs: it is unready while a dependency is down, holds its keys in its
// queue instead of reconciling them against the dead system (a circuit),
// and retries them at once when the dependency is back. A
// manager.Manager with Options.Dependencies is unready meanwhile.
//
// # One check per dependency per process
//
// A *Dependency is one state, shared by pointer. Make one per external
// system and give that same pointer to every controller, and to the
// manager, that needs it:
//
//	pg := &dependency.Dependency{Name: "postgres", Check: ping}
//	roles := reconcile.Options[*Role]{Name: "roles", Dependencies: []*dependency.Dependency{pg}}
//	databases := reconcile.Options[*Database]{Name: "databases", Dependencies: []*dependency.Dependency{pg}}
//
// Two Dependency values of one name would be checked apart and be down at
// different instants; manager.Manager refuses them (ErrInvalid).
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
//   - Every Set holding a Dependency sees one state: the instant it goes
//     down or comes back up (by a check, or a blame through any Set), every
//     Set reports it so (States, Err, Down) and every Set's Watch is told.
//   - One check at a time per Dependency, one per Interval, whatever the
//     number of Sets running with it: the checks start when the first of
//     them runs and end when the last one stops.
//   - Set.States reports every dependency: up or down, since when, its
//     consecutive failures and the latest error. Set.Err is nil while
//     every one is up, else it names each one down and matches ErrDown.
//     Set.Down says whether one is down without taking a lock.
//   - Set.Watch tells when the set goes from all up to one down and back,
//     without polling.
//   - Run leaves no goroutine behind once every Set running with its
//     dependencies has returned; a check that panics fails.
//   - Bad input (a nil dependency, one without a name or a check, two with
//     one name or one given twice, a negative interval or threshold) is an
//     error matching ErrInvalid, never a panic. The zero Set has no
//     dependencies.
package dependency

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/converge-go/converge/internal/invalid"
	"github.com/converge-go/converge/internal/running"
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
	// ErrAlreadyRunning is returned by Set.Run called while the set runs;
	// it matches the ErrAlreadyRunning of every converge package
	// (reconcile.ErrAlreadyRunning included).
	ErrAlreadyRunning error = running.New("dependency")
)

// Dependency is an external system a program needs, and how to tell
// whether it serves. Name and Check are required; the other fields have
// working zero values.
//
// A Dependency is one state, shared by pointer: make one per external
// system per process and give that *Dependency to every controller
// (reconcile.Options.Dependencies) and manager that needs it. Every Set
// holding it then reports the same State at the same instant, a blame
// through any of them takes it down for all, and one check per Interval
// serves them all while any of them runs. Its fields are read when it is
// first given to NewSet and must not change afterwards; a Dependency must
// not be copied once used.
type Dependency struct {
	// Name identifies the dependency in health reports, errors, metrics
	// and Down ("postgres").
	Name string
	// Check returns nil while the dependency serves (a ping, a
	// "SELECT 1"). It must return when its context ends, which it does
	// after Interval. It is called from one goroutine at a time, however
	// many Sets hold the dependency.
	Check func(ctx context.Context) error
	// Interval is how often Check is called (default DefaultInterval), the
	// first time when a Set holding the dependency starts running while
	// no other does.
	Interval time.Duration
	// FailureThreshold is how many consecutive failed checks make the
	// dependency down (default DefaultFailureThreshold). One successful
	// check makes it up.
	FailureThreshold int

	// down is state.Down, for Set.Down, which takes no lock.
	down atomic.Bool

	// mu guards what follows. It is never held while a Set's lock is
	// taken: a Set is told of a change after mu is released.
	mu    sync.Mutex
	spec  *spec  // the fields above, defaults filled in, read at first use
	state State  // valid once spec is set
	sets  []*Set // every Set holding the dependency, told when Down changes
	loop  loop   // the goroutine that checks it, shared by the Sets running
}

// spec is what a Dependency's fields said when it was first used.
type spec struct {
	name      string
	check     func(ctx context.Context) error
	interval  time.Duration
	threshold int
}

// adopt makes d, valid, one of the dependencies of s, reading its fields
// the first time; now is then when its state begins.
func (d *Dependency) adopt(s *Set, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.spec == nil {
		d.spec = &spec{name: d.Name, check: d.Check,
			interval:  cmp.Or(d.Interval, DefaultInterval),
			threshold: cmp.Or(d.FailureThreshold, DefaultFailureThreshold)}
		d.state = State{Name: d.Name, Since: now}
	}
	d.sets = append(d.sets, s)
}

// invalid says what is wrong with d's fields; nil if nothing.
func (d *Dependency) invalid() error {
	switch {
	case d.Name == "":
		return errors.New("a Name is required")
	case !utf8.ValidString(d.Name) || strings.ContainsFunc(d.Name, func(r rune) bool { return !unicode.IsPrint(r) }):
		return fmt.Errorf("the Name %q is not printable UTF-8", d.Name)
	case d.Check == nil:
		return fmt.Errorf("%q has no Check", d.Name)
	case d.Interval < 0 || d.FailureThreshold < 0:
		return fmt.Errorf("%q has a negative Interval or FailureThreshold", d.Name)
	}
	return nil
}

// State is what a Set knows of one dependency.
type State struct {
	Name string
	// Down: FailureThreshold consecutive checks failed, or a caller blamed
	// the dependency (Set.Blame), and no check has succeeded since.
	Down bool
	// Since is when the dependency went down, or came back up; for one
	// never down, when it was first given to NewSet.
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
