package main

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/examples/internal/poll"
	"github.com/converge-go/converge/internal/syncbuf"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/boltstore"
)

// hangJob is the spec of a job whose command runs until it is stopped.
func hangJob(exe, taskLog, name string) Spec {
	return Spec{Command: exe, Args: []string{taskArg, taskLog, name, "hang"}}
}

// runningPID waits until job name of the store s is Running, its command
// started once, and returns the attempt's pid.
func runningPID(t *testing.T, s store.Store[*Job], taskLog, name string) int {
	t.Helper()
	var pid int
	err := poll.Until(t.Context(), time.Minute, 20*time.Millisecond, name+" running", func() (bool, error) {
		obj, err := s.Get(t.Context(), KeyPrefix+name)
		if err != nil {
			return false, nil // the daemon is starting
		}
		pid = obj.Value.Status.PID
		return obj.Value.Status.Phase == Running && countStarts(taskLog, name) == 1, nil
	})
	require.NoError(t, err)
	return pid
}

// waitGoneAndStopped waits until job name is gone from s and nothing of
// the attempt led by pid runs.
func waitGoneAndStopped(t *testing.T, s store.Store[*Job], name string, pid int) {
	t.Helper()
	err := poll.Until(t.Context(), time.Minute, 20*time.Millisecond, name+" gone, its attempt stopped", func() (bool, error) {
		_, err := s.Get(t.Context(), KeyPrefix+name)
		return errors.Is(err, store.ErrNotFound) && len(groupMembers(pid)) == 0, nil
	})
	require.NoError(t, err)
}

// TestJobDeletedWhileTheDaemonIsDownHasItsAttemptStoppedAfterTheRestartThenGoes:
// a daemon is SIGKILLed while a job's attempt runs (its shim survives the
// daemon); the job is deleted while no daemon runs, in the daemon's store
// file with the API-server layer over it (what a daemon killed between a
// "jobs delete" and its cleanup leaves too): the store keeps it, marked,
// and the attempt runs on. The next daemon stops the attempt, then the job
// is gone; the command ran once.
func TestJobDeletedWhileTheDaemonIsDownHasItsAttemptStoppedAfterTheRestartThenGoes(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	taskLog := filepath.Join(dir, "tasks.log")
	env := []string{testMainEnv + "=1", "JOBS_TOKEN="}
	var logs syncbuf.Buffer
	d, err := startDaemon(t.Context(), exe, env, dir, &logs, time.Minute, "-grace", "500ms")
	require.NoError(t, err)
	defer func() { d.Kill() }()
	_, _, err = addJob(t.Context(), dirClient(t, dir, d.url), "orphan", hangJob(exe, taskLog, "orphan"))
	require.NoError(t, err)
	pid := runningPID(t, dirClient(t, dir, d.url), taskLog, "orphan")
	d.Kill()
	require.NotEmpty(t, groupMembers(pid), "the attempt did not survive its daemon")

	deleteInStoreFile(t, dir, "orphan")
	require.NotEmpty(t, groupMembers(pid), "the attempt stopped with no daemon running")

	d, err = startDaemon(t.Context(), exe, env, dir, &logs, time.Minute, "-grace", "500ms")
	require.NoError(t, err, logs.String())
	waitGoneAndStopped(t, dirClient(t, dir, d.url), "orphan", pid)
	require.Equal(t, 1, countStarts(taskLog, "orphan"))
	require.Contains(t, logs.String(), "deleted job: stopping its attempt")
	require.NoError(t, d.Stop(time.Minute))
}

// deleteInStoreFile deletes job name in the bbolt file of the daemon
// directory dir, with the API-server layer over it, and checks that the
// store only marked it.
func deleteInStoreFile(t *testing.T, dir, name string) {
	t.Helper()
	db, err := boltstore.Open[*Job](filepath.Join(dir, "jobs.db"))
	require.NoError(t, err)
	defer func() { require.NoError(t, db.Close()) }()
	layer, err := apistore.New(db, resource.Kind[Spec, Status]{})
	require.NoError(t, err)
	obj, err := layer.Get(t.Context(), KeyPrefix+name)
	require.NoError(t, err)
	_, marked, err := layer.DeleteWith(t.Context(), obj.Key, obj.Revision, apistore.Background)
	require.NoError(t, err)
	require.True(t, marked, "deleted at once: nothing would stop its attempt")
}

// TestJobsDeleteMarksARunningJobUntilItsAttemptStopsAndSaysWhichAreOnlyMarked:
// through the daemon's own store, "jobs delete" marks a job (the layer is
// applied server-side) and the daemon stops its attempt, then removes it.
// Waiting, the command says the job is deleted; not waiting, while the
// attempt takes its grace period to stop (its command ignores SIGTERM), it
// says the job is only marked, which the store shows meanwhile.
func TestJobsDeleteMarksARunningJobUntilItsAttemptStopsAndSaysWhichAreOnlyMarked(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	taskLog := filepath.Join(dir, "tasks.log")
	var logs syncbuf.Buffer
	d, err := startDaemon(t.Context(), exe, []string{testMainEnv + "=1", "JOBS_TOKEN="}, dir, &logs, time.Minute, "-grace", "2s")
	require.NoError(t, err)
	defer d.Kill()
	c := dirClient(t, dir, d.url)
	_, _, err = addJob(t.Context(), c, "busy", hangJob(exe, taskLog, "busy"))
	require.NoError(t, err)
	_, _, err = addJob(t.Context(), c, "stubborn", Spec{Command: exe, Args: []string{taskArg, taskLog, "stubborn", "stubborn"}})
	require.NoError(t, err)
	busy, stubborn := runningPID(t, c, taskLog, "busy"), runningPID(t, c, taskLog, "stubborn")

	out, code := jobsCmd(t, nil, "delete", "-dir", dir, "-wait", "1m", "busy")
	require.Equal(t, 0, code, out)
	require.Equal(t, "deleted busy\n", out)
	_, err = c.Get(t.Context(), KeyPrefix+"busy")
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Empty(t, groupMembers(busy), "the deleted job's attempt still runs")

	out, code = jobsCmd(t, nil, "delete", "-dir", dir, "-wait", "0", "stubborn")
	require.Equal(t, 0, code, out)
	require.Equal(t, "stubborn marked for deletion: waiting for its attempt (pid "+strconv.Itoa(stubborn)+") to stop; the daemon removes it then\n", out)
	obj, err := c.Get(t.Context(), KeyPrefix+"stubborn")
	require.NoError(t, err, "the job went before its attempt stopped")
	require.True(t, obj.Value.Deleting())
	waitGoneAndStopped(t, c, "stubborn", stubborn)
	require.Equal(t, 1, countStarts(taskLog, "stubborn"))
}
