// Package demo holds what the examples' narrated demos and their tests
// share: polling for a condition, a buffer safe for concurrent writers, and
// the check that no pod process survives.
package demo

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"
)

// WaitFor checks cond every 10ms until it holds, returns an error, ctx ends
// or limit passes; what names the condition in the error.
func WaitFor(ctx context.Context, what string, limit time.Duration, cond func() (bool, error)) error {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond()
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if ok {
			return nil
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			return fmt.Errorf("waiting for %s: gave up after %v", what, limit)
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		}
	}
}

// SyncBuffer is a bytes.Buffer that a narrator and a logger can share.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Survivors returns the pids among pids whose process or process group
// still exists.
func Survivors(pids []int) []int {
	var alive []int
	for _, pid := range pids {
		if syscall.Kill(pid, 0) != syscall.ESRCH || syscall.Kill(-pid, 0) != syscall.ESRCH {
			alive = append(alive, pid)
		}
	}
	return alive
}

// AssertNoProcessLeft fails t if a process or process group of pids still
// exists: the demos' tests check it independently of the demos' own check.
func AssertNoProcessLeft(t testing.TB, pids []int) {
	t.Helper()
	if len(pids) == 0 {
		t.Fatal("no pod was started")
	}
	if alive := Survivors(pids); len(alive) > 0 {
		t.Errorf("pods or their process groups still exist: %v", alive)
	}
}
