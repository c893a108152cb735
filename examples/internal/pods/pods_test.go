package pods_test

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/examples/internal/demo"
	"github.com/converge-go/converge/examples/internal/pods"
)

// TestMain runs this test binary as a pod when a supervisor starts it, and
// as a supervisor of a state directory when supervisorEnv names one.
func TestMain(m *testing.M) {
	if dir := os.Getenv(supervisorEnv); dir != "" && !pods.IsPod() {
		os.Exit(superviseUntilKilled(dir))
	}
	demo.TestMain(m)
}

// newTestSupervisor returns a supervisor whose pods run this test binary,
// with its events on a channel, closed when the test ends.
func newTestSupervisor(t *testing.T, grace time.Duration) (*pods.Supervisor, <-chan pods.PodEvent) {
	exe, err := os.Executable()
	require.NoError(t, err)
	events := make(chan pods.PodEvent, 64)
	s := pods.NewSupervisor(pods.SupervisorConfig{Executable: exe, StopGrace: grace, OnEvent: func(ev pods.PodEvent) { events <- ev }})
	t.Cleanup(func() {
		s.Close()
		demo.AssertNoProcessLeft(t, s.Started())
	})
	return s, events
}

func TestSupervisorReportsExitsAndStops(t *testing.T) {
	ctx := t.Context()
	s, events := newTestSupervisor(t, time.Minute)
	a, err := s.Start(ctx, "web", nil)
	require.NoError(t, err)
	b, err := s.Start(ctx, "web", nil)
	require.NoError(t, err)
	assert.Equal(t, pods.PodStarted, (<-events).Kind)
	assert.Equal(t, pods.PodStarted, (<-events).Kind)
	assert.Equal(t, []pods.Pod{a, b}, s.Running("web"))

	// A pod killed from outside wakes its owner.
	require.True(t, s.Signal(a.PID, syscall.SIGKILL))
	assert.Equal(t, "web", <-s.Exits())
	ev := <-events
	assert.Equal(t, pods.PodExited, ev.Kind)
	assert.Equal(t, a.PID, ev.Pod.PID)
	assert.Equal(t, "signal: killed", ev.Exit)
	assert.False(t, s.Alive(a.PID))
	assert.False(t, s.Signal(a.PID, syscall.SIGKILL), "signal to a reaped pod")

	// A pod stopped on purpose ends on SIGTERM (well within the minute of
	// grace) and does not wake its owner.
	require.NoError(t, s.Stop(ctx, b))
	ev = <-events
	assert.Equal(t, pods.PodStopped, ev.Kind)
	// Handled by the pod, or before it had installed its handler.
	assert.Contains(t, []string{"exit status 0", "signal: terminated"}, ev.Exit)
	assert.Empty(t, s.Running("web"))
	select {
	case owner := <-s.Exits():
		t.Errorf("stopped pod woke %q", owner)
	default:
	}
	assert.Equal(t, pods.Stats{Started: 2, Stopped: 1, Exited: 1}, s.Stats())

	s.Close()
	_, err = s.Start(ctx, "web", nil)
	assert.ErrorIs(t, err, pods.ErrSupervisorClosed)
}

// A pod whose command ignores SIGTERM is killed after the grace period,
// with its whole process group.
func TestSupervisorStopEscalates(t *testing.T) {
	s, _ := newTestSupervisor(t, 50*time.Millisecond)
	pod, err := s.Start(t.Context(), "web", []string{"sh", "-c", "trap '' TERM; exec sleep 60"})
	require.NoError(t, err)
	require.NoError(t, s.Stop(t.Context(), pod))
	assert.False(t, s.Alive(pod.PID))
	assert.Empty(t, s.Leftovers())
}

func TestSupervisorCloseStopsEverything(t *testing.T) {
	s, _ := newTestSupervisor(t, time.Second)
	for range 3 {
		_, err := s.Start(t.Context(), "web", nil)
		require.NoError(t, err)
	}
	s.Close()
	assert.Empty(t, s.Running("web"))
	assert.Equal(t, pods.Stats{Started: 3, Stopped: 3}, s.Stats())
	demo.AssertNoProcessLeft(t, s.Started())
}
