// Package procs runs a program of an example as a child process, as the
// examples' demos and tests run their daemons, operators, replicas and
// servers: started (Start), waited for until it serves (StartServing),
// asked to end (Stop: SIGTERM, or StopWith another signal, then SIGKILL
// after a limit) or killed with SIGKILL as a crash would (Kill).
//
// Guarantees, each proven by the test named after it:
//   - A process is always reaped: one goroutine waits for it, and Kill,
//     Stop and a failed StartServing return only once it has been reaped,
//     so no zombie and no waiting goroutine outlives them
//     (TestKillEndsTheProcessWithSIGKILLAndReapsIt).
//   - Stop returns how a process that honours its signal ended, and kills
//     one still running at the limit, with an error matching ErrKilled
//     (TestStopReturnsHowAProcessThatHonoursSIGTERMEnded,
//     TestStopKillsAProcessThatIgnoresSIGTERMOnceTheLimitHasPassed).
//   - Kill ends the whole process group of a process started as its
//     leader (SysProcAttr.Setpgid or Setsid)
//     (TestKillEndsTheGroupOfAProcessThatLeadsOne).
//   - StartServing returns only a process whose server answered its
//     readiness probe with 200
//     (TestStartServingReturnsOnlyOnceTheServerAnswersReady), never takes
//     a URL file an earlier process left
//     (TestStartServingNeverTakesAURLFileAnEarlierProcessLeft), and on
//     failure kills and reaps the process; one that ended first gives an
//     error matching ErrExited that says how
//     (TestStartServingSaysHowAProcessThatEndedFirstEnded,
//     TestStartServingKillsAProcessNeverReadyWhenItsContextEnds).
//
// Linux only, as the examples are: it signals processes and groups.
package procs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// ErrExited matches the error of StartServing when the process ended
// before it was ready.
var ErrExited = errors.New("procs: the process exited before it was ready")

// ErrKilled matches the error of Stop when the process still ran at the
// limit and was killed.
var ErrKilled = errors.New("procs: the process did not stop and was killed")

// Proc is a started child process. Its methods may be called from any
// goroutine.
type Proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // cmd.Wait's, once done is closed
}

// Start starts cmd (configured as the caller wants: arguments,
// environment, output) and returns its Proc; the process is reaped as
// soon as it ends, whoever ends it.
func Start(cmd *exec.Cmd) (*Proc, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Proc{cmd: cmd, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	return p, nil
}

// Pid is the process's id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the process has ended and been reaped.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err is how the process ended (exec.Cmd.Wait's error: nil for exit code
// 0); it blocks until Done is closed.
func (p *Proc) Err() error {
	<-p.done
	return p.err
}

// Signal sends sig to the process; it fails once the process has been
// reaped.
func (p *Proc) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Kill ends the process with SIGKILL, as a crash would, and returns once
// it has been reaped. A process that leads its own process group is
// killed with its group, so that what it started ends too. Killing an
// ended process does nothing but kill what remains of its group.
func (p *Proc) Kill() {
	if p.leadsGroup() {
		// A group's id is its leader's pid, which is not reused while
		// the group has members.
		_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// leadsGroup reports whether the process was started as the leader of a
// process group of its own.
func (p *Proc) leadsGroup() bool {
	a := p.cmd.SysProcAttr
	return a != nil && (a.Setsid || a.Setpgid && a.Pgid == 0)
}

// Stop is StopWith(syscall.SIGTERM, limit).
func (p *Proc) Stop(limit time.Duration) error { return p.StopWith(syscall.SIGTERM, limit) }

// StopWith asks the process to end with sig (SIGINT is PostgreSQL's fast
// shutdown) and returns how it ended (Err), or, if it still runs after
// limit, kills it (Kill) and returns an error matching ErrKilled. It
// blocks until the process has been reaped.
func (p *Proc) StopWith(sig syscall.Signal, limit time.Duration) error {
	_ = p.cmd.Process.Signal(sig)
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-p.done:
		return p.err
	case <-t.C:
		p.Kill()
		return fmt.Errorf("%w: still running %v after %v", ErrKilled, limit, sig)
	}
}
