package procstat_test

import (
	"os"
	"slices"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/examples/internal/procstat"
)

func TestReadNamesThisProcessAndAliveTellsItFromAReusedPid(t *testing.T) {
	self, ok := procstat.Read(os.Getpid())
	require.True(t, ok)
	assert.False(t, self.Ended())
	assert.Equal(t, syscall.Getpgrp(), self.Pgrp)
	assert.Positive(t, self.StartTicks)
	assert.True(t, procstat.Alive(os.Getpid(), self.StartTicks))
	assert.False(t, procstat.Alive(os.Getpid(), self.StartTicks+1), "another start time: another process")

	_, ok = procstat.Read(0)
	assert.False(t, ok)
	pids, err := procstat.PIDs()
	require.NoError(t, err)
	assert.Contains(t, pids, os.Getpid())
	group, err := procstat.Group(self.Pgrp)
	require.NoError(t, err)
	assert.True(t, slices.Contains(group, os.Getpid()))
}

// CPUTicks counts the CPU time a process used: it grows while this one
// works.
func TestCPUTicksGrowsWhileTheProcessWorks(t *testing.T) {
	before, ok := procstat.Read(os.Getpid())
	require.True(t, ok)
	x := 0
	for {
		for i := range 1 << 20 {
			x ^= i
		}
		now, ok := procstat.Read(os.Getpid())
		require.True(t, ok)
		if now.CPUTicks > before.CPUTicks {
			break
		}
	}
	_ = x
}
