package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/examples/internal/procstat"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// canaryProcess starts a process that is none of the daemon's, in a
// process group of its own, and returns its pid and start time; it is
// killed when the test ends.
func canaryProcess(t *testing.T) (int, uint64) {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	st, ok := procstat.Read(cmd.Process.Pid)
	require.True(t, ok)
	return cmd.Process.Pid, st.StartTicks
}

// A pid and start time in a job's status are anyone's to write: the
// daemon signals the process they name only if it is the run's shim (it
// leads its group and carries the run ID). Deleting a job whose status
// names another process, with the run's own ID, leaves that process
// running.
func TestAStatusPidThatIsNotTheRunsShimIsNeverSignalled(t *testing.T) {
	e := newRecoveryEnv(t)
	pid, ticks := canaryProcess(t)
	obj, err := e.layer.Create(t.Context(), KeyPrefix+"forged", &Job{Meta: apistore.Meta{Finalizers: []string{Finalizer}},
		Spec: Spec{Command: e.exe, Args: []string{taskArg, e.taskLog, "forged", "ok"}}})
	require.NoError(t, err)
	v := *obj.Value
	v.Status = Status{Phase: Running, Attempts: 1, RunGeneration: 1, RunID: runID(obj.Key, obj.CreateRevision, 1, 1), PID: pid, StartTicks: ticks}
	obj, err = e.layer.UpdateStatus(t.Context(), obj.Key, &v, obj.Revision)
	require.NoError(t, err)
	_, err = e.layer.Delete(t.Context(), obj.Key, obj.Revision)
	require.NoError(t, err)
	marked, err := e.s.Get(t.Context(), obj.Key)
	require.NoError(t, err)
	_, err = e.rec.Reconcile(t.Context(), reconcile.Request[*Job]{Key: obj.Key, Object: marked, Deleting: true, Store: e.layer})
	require.NoError(t, err)
	require.True(t, procstat.Alive(pid, ticks), "the daemon signalled a process its status named")
	_, err = e.s.Get(t.Context(), obj.Key)
	require.ErrorIs(t, err, store.ErrNotFound)

	require.False(t, isRun(1, 0, "x"), "init is never a run")
	require.False(t, isRun(pid, ticks, ""), "a run without an ID")
}

// A job's run ID is recomputed from its key, incarnation, generation and
// attempt, never read from its status: a forged ID that leads out of the
// runs directory neither judges the attempt by a file there nor writes one.
func TestAForgedRunIDNeverLeadsOutOfTheRunsDirectory(t *testing.T) {
	e := newRecoveryEnv(t)
	outside := t.TempDir()
	files := runFiles{dir: outside, id: "victim"}
	require.NoError(t, files.takeClaim())
	require.NoError(t, files.writeResult(runResult{ExitCode: 0, Ended: time.Now()}))
	forged, err := filepath.Rel(e.runs, filepath.Join(outside, "victim"))
	require.NoError(t, err)
	obj := e.job("out", "ok", 0, Status{Phase: Starting, Attempts: 1, RunGeneration: 1, RunID: forged})
	_, obj = e.reconcile(obj.Key)
	require.Equal(t, Succeeded, obj.Value.Status.Phase, obj.Value.Status.Message)
	require.Equal(t, runID(obj.Key, obj.CreateRevision, 1, 1), obj.Value.Status.RunID)
	require.Equal(t, 1, e.runsOf("out"), "the attempt was judged by a file outside the runs directory")
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	require.Len(t, entries, 2, "a file was written outside the runs directory")
}

// A spec no attempt can run is refused, terminally: a command or an
// argument with a NUL byte, retries beyond what can be counted.
func TestASpecNoAttemptCanRunIsRefused(t *testing.T) {
	for _, s := range []Spec{
		{Command: ""}, {Command: "a\x00b"}, {Command: "true", Args: []string{"x", "\x00"}},
		{Command: "true", Retries: -1}, {Command: "true", Retries: maxRetries + 1}, {Command: "true", Timeout: -1},
	} {
		require.Error(t, checkSpec(s), "%+v", s)
	}
	require.NoError(t, checkSpec(Spec{Command: "true", Retries: maxRetries, Args: []string{"\x1b[31m", "../../x"}}))
	require.Equal(t, `"a\x1b[31mb"`, printable("a\x1b[31mb"))
	require.Equal(t, "plain text ✓", printable("plain text ✓"))
}
