// Package invalid gives every package of the project its own "invalid
// input" sentinel that matches every other one under errors.Is, so that a
// caller can test any converge error with store.ErrInvalid (or queue's,
// lock's, reconcile's, manager's) and get the same answer, while each
// message still names the package that refused the input.
package invalid

// Error is a package's invalid-input sentinel. Make one per package with
// New; compare with errors.Is, never with ==.
type Error struct{ pkg string }

// New returns the invalid-input sentinel of package pkg, whose message is
// "pkg: invalid input".
func New(pkg string) *Error { return &Error{pkg: pkg} }

func (e *Error) Error() string { return e.pkg + ": invalid input" }

// Is reports whether target is an invalid-input sentinel of any package.
func (e *Error) Is(target error) bool {
	_, ok := target.(*Error)
	return ok
}
