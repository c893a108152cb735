// Package watchend is how a watcher whose own goroutine delivers its
// events ends, shared by the watchers that wrap another: Stop asks the
// goroutine to end (once, however many callers), the goroutine sets Err
// and then closes Done, and Result reports Err once Done is closed.
package watchend

import "sync"

// End is a watcher's ending. Make it with New; its goroutine sets Err
// before it closes Done, and reads nothing of it after.
type End struct {
	Stop chan struct{} // closed by RequestStop
	Done chan struct{} // closed by the watcher's goroutine once Err is set
	Err  error         // why the watch ended
	once sync.Once
}

// New returns an End of a watch that runs.
func New() End {
	return End{Stop: make(chan struct{}), Done: make(chan struct{})}
}

// RequestStop closes Stop; it is safe to call more than once,
// concurrently.
func (e *End) RequestStop() { e.once.Do(func() { close(e.Stop) }) }

// Result says why the watch ended: Err once Done is closed, nil while the
// watch runs.
func (e *End) Result() error {
	select {
	case <-e.Done:
		return e.Err
	default:
		return nil
	}
}
