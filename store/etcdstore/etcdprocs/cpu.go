package etcdprocs

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of the CPU times in /proc/<pid>/stat (USER_HZ,
// 100 on every Linux platform Go supports).
const clockTick = 10 * time.Millisecond

// CPUTime returns the CPU time (user and system) used so far by the running
// member processes together, read from /proc (Linux only; elsewhere it
// fails). Its resolution is 10 ms per process: a benchmark compares
// differences over phases of a second or more.
func (c *Cluster) CPUTime() (time.Duration, error) {
	var total time.Duration
	for _, m := range c.members {
		m.mu.Lock()
		cmd := m.cmd
		m.mu.Unlock()
		if cmd == nil {
			continue
		}
		t, err := processCPU(cmd.Process.Pid)
		if err != nil {
			return 0, fmt.Errorf("etcd %s: %w", m.name, err)
		}
		total += t
	}
	return total, nil
}

// processCPU reads the user and system time of process pid from
// /proc/<pid>/stat.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("cpu time: %w", err)
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// fields are counted from the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("cpu time: malformed /proc stat")
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state): utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, errors.New("cpu time: short /proc stat")
	}
	var total time.Duration
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("cpu time: %w", err)
		}
		total += time.Duration(n) * clockTick
	}
	return total, nil
}
