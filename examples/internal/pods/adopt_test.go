package pods_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/examples/internal/demo"
	"github.com/converge-go/converge/examples/internal/pods"
	"github.com/converge-go/converge/examples/internal/poll"
)

// supervisorEnv, set to a state directory, runs this test binary as a
// supervisor of that directory that starts adoptPods pods for "web" and
// runs until it is killed.
const supervisorEnv = "CONVERGE_PODS_TEST_SUPERVISOR"

const adoptPods = 3

// patience bounds each wait of these tests: a hang guard, not a claim
// about speed.
const patience = 20 * time.Second

// superviseUntilKilled is the supervisor process: it returns only if its
// pods cannot be started, or on SIGTERM, leaving them running.
func superviseUntilKilled(dir string) int {
	os.Unsetenv(supervisorEnv) // not for the pods
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "supervisor:", err)
		return 1
	}
	s, err := pods.OpenSupervisor(pods.SupervisorConfig{Executable: exe, StateDir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, "supervisor:", err)
		return 1
	}
	for range adoptPods {
		if _, err := s.Start(context.Background(), "web", nil); err != nil {
			fmt.Fprintln(os.Stderr, "supervisor:", err)
			return 1
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return 0
}

// startSupervisorProcess starts a supervisor process of dir and returns
// once its pods are recorded. Cleanup kills it, then stops whatever pods
// dir still records.
func startSupervisorProcess(t *testing.T, dir string) (*exec.Cmd, []pods.Pod) {
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), supervisorEnv+"="+dir)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if s, err := pods.OpenSupervisor(pods.SupervisorConfig{Executable: exe, StateDir: dir}); assert.NoError(t, err) {
			s.Close()
		}
	})
	var recorded []pods.Pod
	require.NoError(t, poll.Until(t.Context(), patience, 10*time.Millisecond, "the supervisor's pods recorded", func() (bool, error) {
		recorded, err = pods.Recorded(dir)
		return len(recorded) == adoptPods, err
	}))
	return cmd, recorded
}

// openTestSupervisor opens a supervisor of dir, with its events on a
// channel; cleanup closes it and checks that no pod is left.
func openTestSupervisor(t *testing.T, dir string) (*pods.Supervisor, <-chan pods.PodEvent) {
	exe, err := os.Executable()
	require.NoError(t, err)
	events := make(chan pods.PodEvent, 64)
	s, err := pods.OpenSupervisor(pods.SupervisorConfig{Executable: exe, StopGrace: time.Minute, StateDir: dir,
		OnEvent: func(ev pods.PodEvent) { events <- ev }})
	require.NoError(t, err)
	t.Cleanup(func() {
		s.Close()
		demo.AssertNoProcessLeft(t, s.Started())
	})
	return s, events
}

// recv returns the next value of ch, failing t after patience.
func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(patience):
		t.Fatalf("nothing received in %v", patience)
		panic("unreachable")
	}
}

// TestAKilledSupervisorsPodsRunOnAndTheNextOneAdoptsThem kills a
// supervisor process with SIGKILL: its pods, recorded in its state
// directory, run on; a supervisor opened on the directory adopts them,
// reports one killed from outside on Exits, stops another without waking
// its owner, keeps the directory to itself while it runs, records the pods
// it starts beside the adopted ones, and stops them all on Close.
func TestAKilledSupervisorsPodsRunOnAndTheNextOneAdoptsThem(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	first, recorded := startSupervisorProcess(t, dir)
	require.NoError(t, first.Process.Kill())
	_ = first.Wait()
	after, err := pods.Recorded(dir)
	require.NoError(t, err)
	assert.Equal(t, recorded, after, "the pods of a killed supervisor")

	s, events := openTestSupervisor(t, dir)
	assert.Equal(t, pods.Stats{Adopted: adoptPods}, s.Stats())
	assert.Equal(t, recorded, s.Running("web"))
	for range adoptPods {
		assert.Equal(t, pods.PodAdopted, recv(t, events).Kind)
	}
	a, b, c := recorded[0], recorded[1], recorded[2]

	// Killed from outside: the owner is woken.
	require.NoError(t, syscall.Kill(a.PID, syscall.SIGKILL))
	assert.Equal(t, "web", recv(t, s.Exits()))
	ev := recv(t, events)
	assert.Equal(t, pods.PodEvent{Kind: pods.PodExited, Pod: a, Running: 2, Exit: pods.ExitUnknown}, ev)
	assert.False(t, s.Alive(a.PID))
	assert.False(t, s.Signal(a.PID, syscall.SIGKILL), "signal to an ended pod")

	// Stopped on purpose (SIGTERM, well within the minute of grace): not.
	require.NoError(t, s.Stop(ctx, b))
	assert.Equal(t, pods.PodStopped, recv(t, events).Kind)
	assert.Empty(t, pods.Survivors([]int{b.PID}))
	select {
	case owner := <-s.Exits():
		t.Errorf("stopped pod woke %q", owner)
	default:
	}

	_, err = pods.OpenSupervisor(pods.SupervisorConfig{StateDir: dir})
	require.ErrorIs(t, err, pods.ErrStateDirInUse)

	d, err := s.Start(ctx, "web", nil)
	require.NoError(t, err)
	assert.Equal(t, []int{c.PID, d.PID}, pidsOf(s.Running("web")))
	now, err := pods.Recorded(dir)
	require.NoError(t, err)
	assert.Equal(t, []int{c.PID, d.PID}, pidsOf(now), "recorded")

	s.Close()
	now, err = pods.Recorded(dir)
	require.NoError(t, err)
	assert.Empty(t, now)
	assert.Equal(t, pods.Stats{Started: 1, Adopted: adoptPods, Stopped: 3, Exited: 1}, s.Stats())
	assert.Equal(t, []int{a.PID, b.PID, c.PID, d.PID}, s.Started())
	demo.AssertNoProcessLeft(t, s.Started())

	// Closed, the directory is free, and holds nothing to adopt.
	next, err := pods.OpenSupervisor(pods.SupervisorConfig{StateDir: dir})
	require.NoError(t, err)
	assert.Equal(t, pods.Stats{}, next.Stats())
	next.Close()
}

func pidsOf(ps []pods.Pod) []int {
	pids := make([]int, len(ps))
	for i, p := range ps {
		pids[i] = p.PID
	}
	return pids
}
