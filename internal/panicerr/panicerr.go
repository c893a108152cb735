// Package panicerr holds the error a recovered panic becomes, shared by the
// loop (reconcile.PanicError) and the process runner (reconcile/manager),
// so that the runner need not link the loop to report one.
package panicerr

import "fmt"

// Error is a recovered panic: what was passed to panic and the stack of
// the goroutine where it was recovered.
type Error struct {
	// Value is what was passed to panic.
	Value any
	// Stack is the goroutine's stack where the panic was recovered.
	Stack []byte
}

func (e *Error) Error() string { return fmt.Sprintf("panic: %v", e.Value) }
