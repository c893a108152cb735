package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

// The shim is this program run with runEnv set: the leader of an attempt's
// process group, started by the daemon. It claims the run, runs the command
// in its group, enforces the timeout, records the outcome in the result
// file and tears the group down. The daemon stops an attempt by sending
// the shim SIGTERM: the shim records the attempt as stopped, then passes
// the signal on to its group. A command that cannot be started (not found,
// not executable, its argument list too long) is recorded as such. It does not depend on the daemon: an
// attempt whose daemon was killed runs to its end and leaves its result for
// the next daemon.
//
// Arguments: RUNSDIR TIMEOUT GRACE COMMAND [ARG...], durations as Go
// durations (TIMEOUT 0: none).

// shimExitClaimed is the shim's exit code when the run was already claimed:
// it ran nothing.
const shimExitClaimed = 125

func runShim(runID string, args []string) int {
	if len(args) < 4 {
		fmt.Fprintln(os.Stderr, "jobs shim: want RUNSDIR TIMEOUT GRACE COMMAND [ARG...]")
		return 2
	}
	timeout, err1 := time.ParseDuration(args[1])
	grace, err2 := time.ParseDuration(args[2])
	if err := errors.Join(err1, err2); err != nil {
		fmt.Fprintln(os.Stderr, "jobs shim:", err)
		return 2
	}
	files := runFiles{dir: args[0], id: runID}
	if err := files.takeClaim(); err != nil {
		fmt.Fprintln(os.Stderr, "jobs shim: run", runID, "claimed already:", err)
		return shimExitClaimed
	}
	res := shimRun(args[3], args[4:], timeout, grace)
	if err := files.writeResult(res); err != nil {
		fmt.Fprintln(os.Stderr, "jobs shim: record result:", err)
	}
	// Nothing of the attempt outlives it: whatever the command left in its
	// group goes, and the shim with it.
	_ = syscall.Kill(-os.Getpid(), syscall.SIGKILL)
	return 0
}

// shimRun runs the command and returns its outcome.
func shimRun(command string, args []string, timeout, grace time.Duration) runResult {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	cmd := exec.Command(command, args...)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, runEnv+"=") })
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return runResult{ExitCode: -1, Error: err.Error(), Ended: time.Now()}
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()

	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	var res runResult
	select {
	case <-done:
	case <-deadline:
		res.TimedOut = true
	case <-stop:
		res.Stopped = true
	}
	if res.TimedOut || res.Stopped {
		// SIGTERM to the whole group (the shim handles it and stays),
		// SIGKILL to the command after the grace period.
		_ = syscall.Kill(-os.Getpid(), syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(grace):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	res.ExitCode = processExitCode(cmd.ProcessState)
	res.Ended = time.Now()
	return res
}

// processExitCode is the shell's view of a process state: its exit status, or
// 128+N if signal N ended it.
func processExitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
