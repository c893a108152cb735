package main

import (
	"time"

	"github.com/converge-go/converge/internal/cputime"
)

const (
	// idleWindow is how long the process must stay nearly idle.
	idleWindow = 100 * time.Millisecond
	// idleCPU is the CPU time the whole process may use in one
	// idleWindow and still count as idle (10 %).
	idleCPU = idleWindow / 10
	// idleLimit bounds the wait; a process still busy then is measured
	// anyway and reported as not idle.
	idleLimit = 60 * time.Second
)

// waitIdle returns once the process has used less than idleCPU over one
// idleWindow (true), or after idleLimit (false). Other processes do not
// count: only this process's CPU time is read.
func waitIdle() bool {
	deadline := time.Now().Add(idleLimit)
	last := cputime.Process()
	for time.Now().Before(deadline) {
		time.Sleep(idleWindow)
		now := cputime.Process()
		if now-last < idleCPU {
			return true
		}
		last = now
	}
	return false
}
