// Package procstat reads the Linux process table (/proc): a process's
// state, process group and start time. The start time tells a process from
// a later one that reused its pid, so that a program that finds a process
// again after a restart (the jobs daemon its attempts, the pods supervisor
// its pods) never mistakes another for it.
package procstat

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Stat is what /proc/PID/stat says about a process.
type Stat struct {
	// State is R, S, D, T, Z (a zombie: ended, not yet reaped), X (dead)...
	State byte
	// Pgrp is the process group.
	Pgrp int
	// StartTicks is the start time, in clock ticks since boot: with the
	// pid, it names one process.
	StartTicks uint64
	// CPUTicks is the CPU time it has used, user and system, in clock
	// ticks (TickDuration each).
	CPUTicks uint64
}

// TickDuration is a clock tick of /proc/PID/stat (USER_HZ, 100 a second
// on every Linux architecture Go runs on).
const TickDuration = 10 * time.Millisecond

// Ended reports whether the process has ended: only its parent has not
// collected it yet (a zombie), or it is being removed.
func (s Stat) Ended() bool { return s.State == 'Z' || s.State == 'X' }

// Read reads /proc/PID/stat; ok is false if there is no such process (or
// /proc cannot be read).
func Read(pid int) (st Stat, ok bool) {
	if pid <= 0 {
		return Stat{}, false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Stat{}, false
	}
	// The command name (field 2) is in parentheses and may hold anything,
	// spaces and parentheses included: the fields after it follow the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Stat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), f[2] field 5 (pgrp), f[11] and f[12]
	// fields 14 and 15 (utime, stime), f[19] field 22 (starttime).
	if len(f) < 20 || len(f[0]) != 1 {
		return Stat{}, false
	}
	pgrp, err1 := strconv.Atoi(f[2])
	ticks, err2 := strconv.ParseUint(f[19], 10, 64)
	user, err3 := strconv.ParseUint(f[11], 10, 64)
	sys, err4 := strconv.ParseUint(f[12], 10, 64)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return Stat{}, false
	}
	return Stat{State: f[0][0], Pgrp: pgrp, StartTicks: ticks, CPUTicks: user + sys}, true
}

// Alive reports whether the process pid, started at ticks, still runs: it
// has not ended, and its pid has not been reused by another process.
func Alive(pid int, ticks uint64) bool {
	st, ok := Read(pid)
	return ok && st.StartTicks == ticks && !st.Ended()
}

// PIDs returns the pid of every process in the table, in /proc's order.
func PIDs() ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	pids := make([]int, 0, len(entries))
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// Group returns the pids of the processes of process group pgid that have
// not ended, or an error if the table cannot be read.
func Group(pgid int) ([]int, error) {
	all, err := PIDs()
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, pid := range all {
		if st, ok := Read(pid); ok && st.Pgrp == pgid && !st.Ended() {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
