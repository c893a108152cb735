package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// This file reads the process table (Linux /proc): how the daemon finds an
// attempt's process again after a restart, and tells it from a process
// that reused its pid.

// procInfo is what /proc/PID/stat says about a process.
type procInfo struct {
	state byte   // R, S, D, Z (zombie), X (dead), ...
	pgrp  int    // process group
	ticks uint64 // start time, clock ticks since boot
}

// readProc reads /proc/PID/stat; ok is false if there is no such process.
func readProc(pid int) (procInfo, bool) {
	if pid <= 0 {
		return procInfo{}, false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procInfo{}, false
	}
	// The command name (field 2) is in parentheses and may hold anything,
	// spaces and parentheses included: the fields after it follow the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procInfo{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), f[2] field 5 (pgrp), f[19] field 22 (starttime).
	if len(f) < 20 || len(f[0]) != 1 {
		return procInfo{}, false
	}
	pgrp, err1 := strconv.Atoi(f[2])
	ticks, err2 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil {
		return procInfo{}, false
	}
	return procInfo{state: f[0][0], pgrp: pgrp, ticks: ticks}, true
}

// alive reports whether the process pid, started at ticks, still runs (a
// zombie has ended: only its parent has not collected it yet).
func alive(pid int, ticks uint64) bool {
	p, ok := readProc(pid)
	return ok && p.ticks == ticks && p.state != 'Z' && p.state != 'X'
}

// findRun returns the live process whose environment carries runID under
// runEnv: the attempt's shim, found even if its pid was never recorded.
func findRun(runID string) (pid int, ticks uint64, ok bool) {
	want := []byte(runEnv + "=" + runID + "\x00")
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, 0, false
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !(bytes.HasPrefix(env, want) || bytes.Contains(env, append([]byte{0}, want...))) {
			continue
		}
		if p, ok := readProc(pid); ok && p.state != 'Z' && p.state != 'X' {
			return pid, p.ticks, true
		}
	}
	return 0, 0, false
}

// signalGroup signals the process group led by pid if pid is still the
// process started at ticks, and reports whether it did. Checking first
// keeps a signal from reaching a group that reused the number.
func signalGroup(pid int, ticks uint64, sig syscall.Signal) bool {
	if !alive(pid, ticks) {
		return false
	}
	err := syscall.Kill(-pid, sig)
	return err == nil || !errors.Is(err, syscall.ESRCH)
}

// signalProcess signals the process pid alone if it is still the process
// started at ticks, and reports whether it did.
func signalProcess(pid int, ticks uint64, sig syscall.Signal) bool {
	if !alive(pid, ticks) {
		return false
	}
	err := syscall.Kill(pid, sig)
	return err == nil || !errors.Is(err, syscall.ESRCH)
}

// groupMembers returns the pids of the live (not zombie) processes of
// process group pgid.
func groupMembers(pgid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok && p.pgrp == pgid && p.state != 'Z' && p.state != 'X' {
			pids = append(pids, pid)
		}
	}
	return pids
}
