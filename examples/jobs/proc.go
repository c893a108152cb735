package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/converge-go/converge/examples/internal/procstat"
)

// This file finds processes in the process table (Linux /proc, read by
// procstat): how the daemon finds an attempt's process again after a
// restart, and tells it from a process that reused its pid.

// findRun returns the live process whose environment carries runID under
// runEnv: the attempt's shim, found even if its pid was never recorded.
func findRun(runID string) (pid int, ticks uint64, ok bool) {
	pids, err := procstat.PIDs()
	if err != nil {
		return 0, 0, false
	}
	for _, pid := range pids {
		if !carriesRun(pid, runID) {
			continue
		}
		if p, ok := procstat.Read(pid); ok && !p.Ended() {
			return pid, p.StartTicks, true
		}
	}
	return 0, 0, false
}

// carriesRun reports whether the environment of process pid carries runID
// under runEnv (false for an empty runID, or a process this user cannot
// read).
func carriesRun(pid int, runID string) bool {
	if runID == "" {
		return false
	}
	want := []byte(runEnv + "=" + runID + "\x00")
	env, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
	return err == nil && (bytes.HasPrefix(env, want) || bytes.Contains(env, append([]byte{0}, want...)))
}

// isRun reports whether pid, started at ticks, is the live shim of run
// runID: the leader of its process group, carrying the run ID. A pid and
// start time read from status are trusted only so: a token holder may
// write those of any process.
func isRun(pid int, ticks uint64, runID string) bool {
	if pid <= 1 {
		return false
	}
	st, ok := procstat.Read(pid)
	return ok && st.StartTicks == ticks && !st.Ended() && st.Pgrp == pid && carriesRun(pid, runID)
}

// signalGroup signals the process group led by pid if pid is still the
// process started at ticks, and reports whether it did. Checking first
// keeps a signal from reaching a group that reused the number.
func signalGroup(pid int, ticks uint64, sig syscall.Signal) bool {
	if !procstat.Alive(pid, ticks) {
		return false
	}
	err := syscall.Kill(-pid, sig)
	return err == nil || !errors.Is(err, syscall.ESRCH)
}

// signalProcess signals the process pid alone if it is still the process
// started at ticks, and reports whether it did.
func signalProcess(pid int, ticks uint64, sig syscall.Signal) bool {
	if !procstat.Alive(pid, ticks) {
		return false
	}
	err := syscall.Kill(pid, sig)
	return err == nil || !errors.Is(err, syscall.ESRCH)
}

// groupMembers returns the pids of the live (not zombie) processes of
// process group pgid (none if the process table cannot be read).
func groupMembers(pgid int) []int {
	pids, _ := procstat.Group(pgid)
	return pids
}
