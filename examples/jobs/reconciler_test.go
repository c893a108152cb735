package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/converge-go/converge/examples/internal/poll"
	"github.com/converge-go/converge/examples/internal/procstat"
	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/stretchr/testify/require"
)

// These tests put a job in the state a daemon killed at one precise moment
// leaves behind, then reconcile it as the next daemon would, with real
// processes (the shims and commands are copies of the test binary).

type recoveryEnv struct {
	t *testing.T
	s *store.Memory[*Job]
	// layer is s with the API-server layer over it, as the daemon's store.
	layer   *apistore.Store[*Job]
	rec     *Reconciler
	runs    string
	taskLog string
	exe     string
}

func newRecoveryEnv(t *testing.T) *recoveryEnv {
	t.Setenv(testMainEnv, "1") // the shims this process starts run main
	exe, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	require.NoError(t, os.MkdirAll(runs, 0o700))
	s := store.NewMemory[*Job]()
	t.Cleanup(func() { _ = s.Close() })
	l := newLauncher(exe, runs, time.Second)
	t.Cleanup(l.wait)
	rec := &Reconciler{
		launcher: l,
		backoff:  queue.NewExponential[string](time.Second, time.Minute, 0),
		cached:   func(string) (store.Object[*Job], bool) { return store.Object[*Job]{}, false },
		poll:     10 * time.Millisecond,
	}
	layer, err := apistore.New(s, resource.Kind[Spec, Status]{})
	require.NoError(t, err)
	e := &recoveryEnv{t: t, s: s, layer: layer, rec: rec, runs: runs, taskLog: filepath.Join(dir, "tasks.log"), exe: exe}
	rec.cached = func(key string) (store.Object[*Job], bool) {
		obj, err := s.Get(context.Background(), key)
		return obj, err == nil
	}
	return e
}

// job stores job name running task mode, with status st; a recorded
// attempt (Starting, Running) without a RunID gets its own.
func (e *recoveryEnv) job(name, mode string, retries int, st Status) store.Object[*Job] {
	e.t.Helper()
	obj, err := e.s.Create(e.t.Context(), KeyPrefix+name, &Job{Meta: apistore.Meta{Generation: 1}, ObservedGeneration: 1,
		Spec: Spec{Command: e.exe, Args: []string{taskArg, e.taskLog, name, mode}, Retries: retries}})
	require.NoError(e.t, err)
	if (st.Phase == Starting || st.Phase == Running) && st.RunID == "" {
		st.RunID = runID(obj.Key, obj.CreateRevision, st.RunGeneration, st.Attempts)
	}
	if st.Phase != "" {
		v := *obj.Value
		v.Status = st
		obj, err = e.s.Update(e.t.Context(), obj.Key, &v, obj.Revision)
		require.NoError(e.t, err)
	}
	return obj
}

// reconcile reconciles key until it asks for nothing but a later look.
func (e *recoveryEnv) reconcile(key string) (reconcile.Result, store.Object[*Job]) {
	e.t.Helper()
	obj, err := e.s.Get(e.t.Context(), key)
	require.NoError(e.t, err)
	res, err := e.rec.Reconcile(e.t.Context(), reconcile.Request[*Job]{Key: key, Object: obj, Store: e.s})
	require.NoError(e.t, err)
	obj, err = e.s.Get(e.t.Context(), key)
	require.NoError(e.t, err)
	return res, obj
}

// runsOf counts the runs of job name's command.
func (e *recoveryEnv) runsOf(name string) int {
	lines, err := readTaskLog(e.taskLog)
	if os.IsNotExist(err) {
		return 0
	}
	require.NoError(e.t, err)
	n := 0
	for _, l := range lines {
		if l.kind == "start" && l.name == name {
			n++
		}
	}
	return n
}

func TestIntentRecordedButNeverLaunchedIsLaunchedOnceUnderItsRunID(t *testing.T) {
	e := newRecoveryEnv(t)
	obj := e.job("a", "ok", 0, Status{Phase: Starting, Attempts: 1, RunGeneration: 1})
	recorded := obj.Value.Status.RunID
	_, obj = e.reconcile(obj.Key)
	require.Equal(t, Succeeded, obj.Value.Status.Phase, obj.Value.Status.Message)
	require.Equal(t, 1, obj.Value.Status.Attempts)
	require.Equal(t, recorded, obj.Value.Status.RunID)
	require.Equal(t, 1, e.runsOf("a"))
}

func TestSecondShimOfAClaimedRunRunsNothing(t *testing.T) {
	e := newRecoveryEnv(t)
	files := runFiles{dir: e.runs, id: "b-run"}
	require.NoError(t, files.takeClaim())
	c, err := e.rec.launcher.launch("b-run", Spec{Command: e.exe, Args: []string{taskArg, e.taskLog, "b", "ok"}})
	require.NoError(t, err)
	<-c.done
	_, ok, err := files.readResult()
	require.NoError(t, err)
	require.False(t, ok, "a shim of a claimed run recorded a result")
	require.Equal(t, 0, e.runsOf("b"), "a shim of a claimed run ran the command")
}

func TestAttemptThatEndedWhileNoDaemonRanIsJudgedByItsResultFile(t *testing.T) {
	e := newRecoveryEnv(t)
	obj := e.job("c", "ok", 2, Status{Phase: Running, Attempts: 1, RunGeneration: 1, PID: 1 << 22, StartTicks: 1})
	files := runFiles{dir: e.runs, id: obj.Value.Status.RunID}
	require.NoError(t, files.takeClaim())
	require.NoError(t, files.writeResult(runResult{ExitCode: 0, Ended: time.Now()}))
	_, obj = e.reconcile(obj.Key)
	require.Equal(t, Succeeded, obj.Value.Status.Phase, obj.Value.Status.Message)
	require.Equal(t, 1, obj.Value.Status.Attempts)
	require.Equal(t, 0, e.runsOf("c"), "a finished attempt ran again")
	_, obj = e.reconcile(obj.Key)
	require.Equal(t, Succeeded, obj.Value.Status.Phase)
	require.Equal(t, 0, e.runsOf("c"), "a succeeded job ran again")
}

func TestAttemptWhoseProcessVanishedWithoutResultCountsAsFailedAndBacksOff(t *testing.T) {
	e := newRecoveryEnv(t)
	// The recorded pid is this test process's, but not its start time:
	// a reused pid, not the attempt.
	self, ok := procstat.Read(os.Getpid())
	require.True(t, ok)
	obj := e.job("d", "ok", 1, Status{Phase: Running, Attempts: 1, RunGeneration: 1, PID: os.Getpid(), StartTicks: self.StartTicks + 1})
	require.NoError(t, runFiles{dir: e.runs, id: obj.Value.Status.RunID}.takeClaim())
	res, obj := e.reconcile(obj.Key)
	st := obj.Value.Status
	require.Equal(t, Backoff, st.Phase, st.Message)
	require.Equal(t, 1, st.Attempts)
	require.Equal(t, -1, *st.ExitCode)
	require.Contains(t, st.Message, "without recording a result")
	require.Equal(t, time.Second, res.RequeueAfter)
	require.WithinDuration(t, time.Now().Add(time.Second), st.NextAttemptAt, 500*time.Millisecond)
	// Before NextAttemptAt, a reconcile (a restarted daemon's) waits.
	res, obj = e.reconcile(obj.Key)
	require.Equal(t, Backoff, obj.Value.Status.Phase)
	require.Positive(t, res.RequeueAfter)
	require.Equal(t, 0, e.runsOf("d"))
}

func TestRunningAttemptOfAnotherDaemonIsAdoptedNotStartedAgain(t *testing.T) {
	e := newRecoveryEnv(t)
	// An attempt started by "another daemon": a launcher this reconciler
	// does not know.
	obj := e.job("e", "sleep", 0, Status{Phase: Starting, Attempts: 1, RunGeneration: 1})
	other := newLauncher(e.exe, e.runs, time.Second)
	c, err := other.launch(obj.Value.Status.RunID, Spec{Command: e.exe, Args: []string{taskArg, e.taskLog, "e", "sleep", "300ms"}})
	require.NoError(t, err)
	_, obj = e.reconcile(obj.Key) // finds it by its run ID, records it, waits
	require.Equal(t, Succeeded, obj.Value.Status.Phase, obj.Value.Status.Message)
	require.Equal(t, c.pid, obj.Value.Status.PID)
	require.Equal(t, 1, e.runsOf("e"))
	other.wait()
}

func TestDeletedJobHasItsRunningAttemptStopped(t *testing.T) {
	e := newRecoveryEnv(t)
	obj := e.job("f", "hang", 0, Status{})
	done := make(chan error, 1)
	go func() {
		_, err := e.rec.Reconcile(t.Context(), reconcile.Request[*Job]{Key: obj.Key, Object: obj, Store: e.s})
		done <- err
	}()
	var running store.Object[*Job]
	require.NoError(t, poll.Until(t.Context(), time.Minute, 10*time.Millisecond, "running", func() (bool, error) {
		o, err := e.s.Get(t.Context(), obj.Key)
		running = o
		return err == nil && o.Value.Status.Phase == Running && e.runsOf("f") == 1, err
	}))
	_, err := e.s.Delete(t.Context(), obj.Key, running.Revision)
	require.NoError(t, err)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("the reconcile did not return after the deletion")
	}
	require.Empty(t, groupMembers(running.Value.Status.PID), "the deleted job's attempt still runs")
}

// In a store with the API-server layer, as the daemon's, deleting a job
// whose attempt runs only marks it: the reconcile waiting for the attempt
// stops it, and the next (which the mark wakes) removes the finalizer,
// which removes the job.
func TestDeletingAJobMarksItUntilItsRunningAttemptIsStoppedThenItGoes(t *testing.T) {
	e := newRecoveryEnv(t)
	obj, err := e.layer.Create(t.Context(), KeyPrefix+"m", &Job{Spec: Spec{Command: e.exe, Args: []string{taskArg, e.taskLog, "m", "hang"}}})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := e.rec.Reconcile(t.Context(), reconcile.Request[*Job]{Key: obj.Key, Object: obj, Store: e.layer})
		done <- err
	}()
	var running store.Object[*Job]
	require.NoError(t, poll.Until(t.Context(), time.Minute, 10*time.Millisecond, "running", func() (bool, error) {
		o, err := e.s.Get(t.Context(), obj.Key)
		running = o
		return err == nil && o.Value.Status.Phase == Running && e.runsOf("m") == 1, err
	}))
	require.True(t, running.Value.HasFinalizer(Finalizer), "an attempt started before the finalizer was on the job")
	_, marked, err := e.layer.DeleteWith(t.Context(), obj.Key, running.Revision, apistore.Background)
	require.NoError(t, err)
	require.True(t, marked)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("the reconcile did not return after the deletion")
	}
	require.Empty(t, groupMembers(running.Value.Status.PID), "the deleted job's attempt still runs")
	markedObj, err := e.s.Get(t.Context(), obj.Key)
	require.NoError(t, err, "the job went before its finalizer was removed")
	require.True(t, markedObj.Value.Deleting())

	_, err = e.rec.Reconcile(t.Context(), reconcile.Request[*Job]{Key: obj.Key, Object: markedObj, Deleting: true, Store: e.layer})
	require.NoError(t, err)
	_, err = e.s.Get(t.Context(), obj.Key)
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Equal(t, 1, e.runsOf("m"))
}

// A job marked for deletion while no daemon ran, its attempt still
// running (started by a daemon since gone: not a child of this one), has
// that attempt stopped by the next daemon's reconcile, which then removes
// the finalizer: the job is gone and nothing of the attempt is left.
func TestJobMarkedWhileNoDaemonRanHasItsAdoptedAttemptStoppedThenGoes(t *testing.T) {
	e := newRecoveryEnv(t)
	obj, err := e.layer.Create(t.Context(), KeyPrefix+"n", &Job{Meta: apistore.Meta{Finalizers: []string{Finalizer}},
		Spec: Spec{Command: e.exe, Args: []string{taskArg, e.taskLog, "n", "hang"}}})
	require.NoError(t, err)
	run := runID(obj.Key, obj.CreateRevision, 1, 1)
	other := newLauncher(e.exe, e.runs, time.Second)
	c, err := other.launch(run, Spec{Command: e.exe, Args: []string{taskArg, e.taskLog, "n", "hang"}})
	require.NoError(t, err)
	v := *obj.Value
	v.Status = Status{Phase: Running, Attempts: 1, RunGeneration: 1, RunID: run, PID: c.pid, StartTicks: c.ticks}
	obj, err = e.layer.UpdateStatus(t.Context(), obj.Key, &v, obj.Revision)
	require.NoError(t, err)
	require.NoError(t, poll.Until(t.Context(), time.Minute, 10*time.Millisecond, "the attempt's command running", func() (bool, error) {
		return e.runsOf("n") == 1, nil
	}))
	_, err = e.layer.Delete(t.Context(), obj.Key, obj.Revision)
	require.NoError(t, err)

	marked, err := e.s.Get(t.Context(), obj.Key)
	require.NoError(t, err)
	require.True(t, marked.Value.Deleting())
	_, err = e.rec.Reconcile(t.Context(), reconcile.Request[*Job]{Key: obj.Key, Object: marked, Deleting: true, Store: e.layer})
	require.NoError(t, err)
	other.wait()
	require.Empty(t, groupMembers(c.pid), "the attempt of the deleted job still runs")
	_, err = e.s.Get(t.Context(), obj.Key)
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Equal(t, 1, e.runsOf("n"))
}

func TestShutdownStopsARunningAttemptAndRecordsIt(t *testing.T) {
	e := newRecoveryEnv(t)
	obj := e.job("g", "hang", 1, Status{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan store.Object[*Job])
	go func() {
		o, _ := e.s.Get(ctx, obj.Key)
		_, _ = e.rec.Reconcile(ctx, reconcile.Request[*Job]{Key: obj.Key, Object: o, Store: e.s})
		o, _ = e.s.Get(context.Background(), obj.Key)
		done <- o
	}()
	require.NoError(t, poll.Until(t.Context(), time.Minute, 10*time.Millisecond, "running", func() (bool, error) {
		return e.runsOf("g") == 1, nil
	}))
	cancel()
	var got store.Object[*Job]
	select {
	case got = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the reconcile did not return after its context ended")
	}
	st := got.Value.Status
	require.Equal(t, Backoff, st.Phase, st.Message)
	require.True(t, strings.Contains(st.Message, "stopped by the daemon"), st.Message)
	require.Empty(t, groupMembers(st.PID))
	// The shim's own record says so too: a restarted daemon judging the
	// attempt by its result file tells the same story.
	res, ok, err := runFiles{dir: e.runs, id: st.RunID}.readResult()
	require.NoError(t, err)
	require.True(t, ok, "no result file")
	require.True(t, res.Stopped, "the shim recorded %+v", res)
}

// A shim that dies of the daemon's SIGTERM before recording anything (this
// one is a shell script that records nothing) still leaves an attempt
// recorded as stopped by the daemon: the daemon knows it stopped it.
func TestAttemptTheDaemonStoppedIsRecordedAsStoppedEvenIfItsShimRecordedNothing(t *testing.T) {
	e := newRecoveryEnv(t)
	fakeShim := filepath.Join(t.TempDir(), "shim")
	require.NoError(t, os.WriteFile(fakeShim, []byte("#!/bin/sh\nexec sleep 600\n"), 0o700))
	e.rec.launcher.exe = fakeShim
	obj := e.job("h", "ok", 1, Status{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := e.rec.Reconcile(ctx, reconcile.Request[*Job]{Key: obj.Key, Object: obj, Store: e.s})
		done <- err
	}()
	require.NoError(t, poll.Until(t.Context(), time.Minute, 10*time.Millisecond, "running", func() (bool, error) {
		o, err := e.s.Get(t.Context(), obj.Key)
		return err == nil && o.Value.Status.Phase == Running, err
	}))
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("the reconcile did not return after its context ended")
	}
	got, err := e.s.Get(t.Context(), obj.Key)
	require.NoError(t, err)
	st := got.Value.Status
	require.Equal(t, Backoff, st.Phase, st.Message)
	require.Contains(t, st.Message, "stopped by the daemon")
	require.Equal(t, -1, *st.ExitCode)
}
