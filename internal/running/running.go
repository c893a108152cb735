// Package running gives every package of the project its own "already
// running" sentinel that matches every other one under errors.Is, so that a
// caller can test the refusal of any converge Run or Start called while it
// runs (or, for a Manager, called a second time) with
// reconcile.ErrAlreadyRunning and get the same answer, while each message
// still names the package that refused the call.
package running

// Error is a package's already-running sentinel. Make one per package with
// New; compare with errors.Is, never with ==.
type Error struct{ pkg string }

// New returns the already-running sentinel of package pkg, whose message
// is "pkg: already running".
func New(pkg string) *Error { return &Error{pkg: pkg} }

func (e *Error) Error() string { return e.pkg + ": already running" }

// Is reports whether target is an already-running sentinel of any package.
func (e *Error) Is(target error) bool {
	_, ok := target.(*Error)
	return ok
}
