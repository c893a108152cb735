package main

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/converge-go/converge/examples/internal/procstat"
)

// launcher starts attempts (shims) as children of the daemon and keeps
// track of them until they are reaped. Attempts started by an earlier
// daemon are not its children: the reconciler adopts those through /proc.
type launcher struct {
	exe     string // this program, run in shim mode
	runsDir string
	grace   time.Duration // SIGTERM to SIGKILL, for timeouts and stops

	mu       sync.Mutex
	children map[string]*child // by run ID, until reaped and collected
	wg       sync.WaitGroup
}

// child is an attempt started by this daemon.
type child struct {
	pid   int
	ticks uint64
	done  chan struct{} // closed once the shim is reaped
}

func newLauncher(exe, runsDir string, grace time.Duration) *launcher {
	return &launcher{exe: exe, runsDir: runsDir, grace: grace, children: make(map[string]*child)}
}

// launch starts the shim of run runID in a process group of its own. It
// does not wait for it. If the shim cannot be started, the error is a
// *startError.
func (l *launcher) launch(runID string, spec Spec) (*child, error) {
	files := runFiles{dir: l.runsDir, id: runID}
	out, err := os.OpenFile(files.log(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer out.Close() // the shim has its own copy
	args := append([]string{l.runsDir, time.Duration(spec.Timeout).String(), l.grace.String(), spec.Command}, spec.Args...)
	cmd := exec.Command(l.exe, args...)
	cmd.Env = append(os.Environ(), runEnv+"="+runID)
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group, so the attempt is stopped as a whole and a
	// terminal's Ctrl-C reaches the daemon, not the attempt. No Pdeathsig:
	// the attempt outlives a killed daemon, and the next one adopts it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, &startError{runID: runID, err: err}
	}
	c := &child{pid: cmd.Process.Pid, done: make(chan struct{})}
	// Not reaped yet, so /proc still describes it.
	if p, ok := procstat.Read(c.pid); ok {
		c.ticks = p.StartTicks
	}
	l.mu.Lock()
	l.children[runID] = c
	l.mu.Unlock()
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		_ = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// startError is a launch whose shim could not be started (exec failed:
// its argument list too long, the program gone, ...): nothing of the
// attempt ran.
type startError struct {
	runID string
	err   error
}

func (e *startError) Error() string {
	return fmt.Sprintf("jobs: start the shim of %s: %v", e.runID, e.err)
}

func (e *startError) Unwrap() error { return e.err }

// child returns the attempt runID if this daemon started it.
func (l *launcher) child(runID string) *child {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.children[runID]
}

// forget drops a finished attempt's record.
func (l *launcher) forget(runID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c, ok := l.children[runID]; ok {
		select {
		case <-c.done:
			delete(l.children, runID)
		default:
		}
	}
}

// wait waits until every child has been reaped.
func (l *launcher) wait() { l.wg.Wait() }
