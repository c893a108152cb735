package intent_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/kit/intent"
)

// attemptEnv starts the test binary as an attempt's process: "sleep"
// (runs until killed), "result:TEXT" (writes TEXT as its result and
// ends), or "operator:DIR:ID" (starts ID under Runs{DIR} as a "sleep"
// child, prints the child's pid, and runs until killed).
const attemptEnv = "INTENT_TEST_ATTEMPT"

func attempt(mode string) int {
	switch {
	case mode == "sleep":
		untilKilled() // the child's lifetime
		return 0
	case strings.HasPrefix(mode, "result:"):
		if err := intent.WriteResult([]byte(strings.TrimPrefix(mode, "result:"))); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	case strings.HasPrefix(mode, "operator:"):
		dir, id, _ := strings.Cut(strings.TrimPrefix(mode, "operator:"), ":")
		cmd := child("sleep")
		if err := (intent.Runs{Dir: dir}).Start(id, cmd); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println(cmd.Process.Pid)
		untilKilled()
		return 0
	}
	return 2
}

// untilKilled blocks until the process is killed (the tests end it with
// SIGKILL) or asked to end with SIGTERM; waiting on a signal, not a timer,
// it holds no clock and cannot run out.
func untilKilled() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM)
	<-stop
}

// child is the test binary as an attempt in mode.
func child(mode string) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), attemptEnv+"="+mode)
	cmd.Stderr = os.Stderr
	return cmd
}

// kill SIGKILLs pid and, if it is cmd's, reaps it.
func kill(t *testing.T, pid int, cmd *exec.Cmd) {
	t.Helper()
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	if cmd != nil {
		_ = cmd.Wait()
	}
}

// settled returns what Find says of id once it no longer says Running:
// a process killed by another's signal ends when the kernel is done with
// it, not when kill returns.
func settled(t *testing.T, runs intent.Runs, id string) intent.Run {
	t.Helper()
	for range 1000 {
		run, err := runs.Find(id)
		require.NoError(t, err)
		if run.State != intent.Running {
			return run
		}
		<-time.After(10 * time.Millisecond)
	}
	t.Fatalf("attempt %s still running 10s after its SIGKILL", id)
	return intent.Run{}
}

// TestAnAttemptIsRunningWhileItsProcessLivesAndLostOnceKilled: Find says
// Absent before Start, Running while the attempt's process lives, and
// Finished and Lost once it is SIGKILLed without a result; a second
// Start of the same ID is refused.
func TestAnAttemptIsRunningWhileItsProcessLivesAndLostOnceKilled(t *testing.T) {
	runs := intent.Runs{Dir: t.TempDir()}
	run, err := runs.Find("a1")
	require.NoError(t, err)
	require.Equal(t, intent.Absent, run.State)

	cmd := child("sleep")
	require.NoError(t, runs.Start("a1", cmd))
	run, err = runs.Find("a1")
	require.NoError(t, err)
	require.Equal(t, intent.Running, run.State)
	require.ErrorIs(t, runs.Start("a1", child("sleep")), intent.ErrStarted)

	kill(t, cmd.Process.Pid, cmd)
	run, err = runs.Find("a1")
	require.NoError(t, err)
	require.Equal(t, intent.Run{State: intent.Finished, Lost: true}, run)
}

// TestAnAttemptsResultIsFoundOnceItEnds: an attempt that writes its
// result and ends is Finished with it.
func TestAnAttemptsResultIsFoundOnceItEnds(t *testing.T) {
	runs := intent.Runs{Dir: t.TempDir()}
	cmd := child("result:exit 0")
	require.NoError(t, runs.Start("a1", cmd))
	require.NoError(t, cmd.Wait())
	run, err := runs.Find("a1")
	require.NoError(t, err)
	require.Equal(t, intent.Run{State: intent.Finished, Result: []byte("exit 0")}, run)
}

// TestAFinishedAttemptIsRemovedAndARunningOneKept: Remove refuses an
// attempt that runs (ErrRunning, its files kept), forgets a finished one
// (Find says Absent, a new Start runs it again), and takes an attempt
// never started, or removed before, as removed.
func TestAFinishedAttemptIsRemovedAndARunningOneKept(t *testing.T) {
	runs := intent.Runs{Dir: t.TempDir()}
	require.NoError(t, runs.Remove("never"))
	cmd := child("sleep")
	require.NoError(t, runs.Start("a1", cmd))
	require.ErrorIs(t, runs.Remove("a1"), intent.ErrRunning)
	run, err := runs.Find("a1")
	require.NoError(t, err)
	require.Equal(t, intent.Running, run.State)

	kill(t, cmd.Process.Pid, cmd)
	require.NoError(t, runs.Remove("a1"))
	require.NoError(t, runs.Remove("a1"))
	run, err = runs.Find("a1")
	require.NoError(t, err)
	require.Equal(t, intent.Run{State: intent.Absent}, run)
	entries, err := os.ReadDir(runs.Dir)
	require.NoError(t, err)
	require.Empty(t, entries)

	done := child("result:exit 0")
	require.NoError(t, runs.Start("a1", done))
	require.NoError(t, done.Wait())
	require.NoError(t, runs.Remove("a1"))
	run, err = runs.Find("a1")
	require.NoError(t, err)
	require.Equal(t, intent.Absent, run.State)
	require.ErrorIs(t, runs.Remove("../a1"), intent.ErrInvalid)
}

// TestAnAttemptOutlivesItsSIGKILLedStarterAndIsKnownRunningThenLost: the
// process that started an attempt is SIGKILLed; a new process (the test)
// finds the attempt Running, without any claim file of the operator's,
// and Lost once the attempt itself is killed.
func TestAnAttemptOutlivesItsSIGKILLedStarterAndIsKnownRunningThenLost(t *testing.T) {
	dir := t.TempDir()
	op := child("operator:" + dir + ":a1")
	out, err := op.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, op.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	require.NoError(t, err)
	kill(t, op.Process.Pid, op)

	runs := intent.Runs{Dir: dir}
	run, err := runs.Find("a1")
	require.NoError(t, err)
	require.Equal(t, intent.Running, run.State, "the attempt outlives its starter")
	kill(t, pid, nil)
	require.Equal(t, intent.Run{State: intent.Finished, Lost: true}, settled(t, runs, "a1"))
}

// TestAnAttemptHeldInProcessIsRunningUntilReleased: Hold marks work done
// in process as running; released with its result written it is
// Finished with it; a second Hold is refused; a bad ID is ErrInvalid.
func TestAnAttemptHeldInProcessIsRunningUntilReleased(t *testing.T) {
	runs := intent.Runs{Dir: t.TempDir()}
	release, err := runs.Hold("a1")
	require.NoError(t, err)
	run, err := runs.Find("a1")
	require.NoError(t, err)
	require.Equal(t, intent.Running, run.State)
	_, err = runs.Hold("a1")
	require.ErrorIs(t, err, intent.ErrStarted)
	path, err := runs.ResultPath("a1")
	require.NoError(t, err)
	require.NoError(t, intent.WriteFile(path, []byte("done"), 0o600))
	require.NoError(t, release())
	run, err = runs.Find("a1")
	require.NoError(t, err)
	require.Equal(t, intent.Run{State: intent.Finished, Result: []byte("done")}, run)

	for _, id := range []string{"", "a/b", ".."} {
		_, err := runs.Find(id)
		require.ErrorIs(t, err, intent.ErrInvalid, id)
	}
	require.ErrorIs(t, intent.WriteResult(nil), intent.ErrInvalid)
}

// TestAnAttemptWhoseProcessNeverStartedIsAbsentAndRunByTheNextStart: a
// Start whose process cannot start leaves the lock file on disk as a
// starter SIGKILLed before it forked does (created, unmarked, held by
// no one); Find says Absent, as of an attempt never started, and the
// next Start runs it, once: of eight racing to, one starts it and the
// others are refused with ErrStarted.
func TestAnAttemptWhoseProcessNeverStartedIsAbsentAndRunByTheNextStart(t *testing.T) {
	runs := intent.Runs{Dir: t.TempDir()}
	require.Error(t, runs.Start("a1", exec.Command(filepath.Join(t.TempDir(), "missing"))))
	run, err := runs.Find("a1")
	require.NoError(t, err)
	require.Equal(t, intent.Run{State: intent.Absent}, run)

	var wg sync.WaitGroup
	started := make(chan *exec.Cmd, 8)
	for i := range 8 {
		wg.Go(func() {
			cmd := child(fmt.Sprint("result:", i))
			err := runs.Start("a1", cmd)
			if err == nil {
				started <- cmd
				return
			}
			require.ErrorIs(t, err, intent.ErrStarted)
		})
	}
	wg.Wait()
	close(started)
	require.Len(t, started, 1, "one Start runs the attempt")
	cmd := <-started
	require.NoError(t, cmd.Wait())
	run = settled(t, runs, "a1")
	require.Equal(t, intent.Finished, run.State)
	require.False(t, run.Lost)
	_, err = runs.Hold("a1")
	require.ErrorIs(t, err, intent.ErrStarted, "a finished attempt is not taken over")
}

// TestAHoldTakesOverAnAttemptWhoseProcessNeverStarted: work done in
// process may take over an attempt whose process never started, and is
// then Running, and Lost if released without a result.
func TestAHoldTakesOverAnAttemptWhoseProcessNeverStarted(t *testing.T) {
	runs := intent.Runs{Dir: t.TempDir()}
	require.Error(t, runs.Start("a1", exec.Command(filepath.Join(t.TempDir(), "missing"))))
	release, err := runs.Hold("a1")
	require.NoError(t, err)
	run, err := runs.Find("a1")
	require.NoError(t, err)
	require.Equal(t, intent.Running, run.State)
	require.NoError(t, release())
	run, err = runs.Find("a1")
	require.NoError(t, err)
	require.Equal(t, intent.Run{State: intent.Finished, Lost: true}, run)
}
