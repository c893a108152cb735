package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/converge-go/converge/examples/internal/poll"
	"github.com/converge-go/converge/internal/syncbuf"
	"github.com/converge-go/converge/store/httpstore"
)

// TestSIGTERMStopsRunningAttemptsRecordsThemAndLeavesNoProcess starts a
// daemon with a token, adds a job that never ends through "jobs run" (which
// waits), sends the daemon SIGTERM, and checks that the daemon exits 0, that
// the attempt was stopped and recorded as a failed attempt with its retry
// scheduled, that "jobs run" keeps waiting instead of reporting a result,
// and that no process of the attempt is left.
func TestSIGTERMStopsRunningAttemptsRecordsThemAndLeavesNoProcess(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	dir := t.TempDir()
	env := []string{testMainEnv + "=1", "JOBS_TOKEN=s3cret"}
	var logs syncbuf.Buffer
	args := []string{"-grace", "500ms", "-backoff", "1h", "-backoff-max", "1h"} // the retry waits past the test
	d, err := startDaemon(ctx, exe, env, dir, &logs, time.Minute, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if d != nil {
			d.Kill()
		}
	}()
	taskLog := filepath.Join(dir, "tasks.log")
	var runOut syncbuf.Buffer
	runDone := startCmd(t, &runOut, env, "run", "-dir", dir, "-retries", "1", "forever", "--", exe, taskArg, taskLog, "forever", "hang")

	c := tokenClient(t, d.url, "s3cret")
	var pid int
	err = poll.Until(ctx, time.Minute, 20*time.Millisecond, "forever running", func() (bool, error) {
		obj, err := c.Get(ctx, KeyPrefix+"forever")
		if err != nil {
			return false, nil
		}
		pid = obj.Value.Status.PID
		return obj.Value.Status.Phase == Running && countStarts(taskLog, "forever") == 1, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, runOut.String(), logs.String())
	}
	if err := d.Stop(time.Minute); err != nil {
		t.Fatalf("the daemon's exit after SIGTERM: %v\n%s", err, logs.String())
	}
	d = nil
	if left := groupMembers(pid); len(left) > 0 {
		t.Errorf("processes of the attempt left: %v", left)
	}
	select {
	case err := <-runDone:
		t.Errorf("jobs run returned (%v) while the job waits for its retry:\n%s", err, runOut.String())
	default:
	}

	// The stopped attempt is on record, with its retry scheduled.
	d, err = startDaemon(ctx, exe, env, dir, &logs, time.Minute, args...)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := tokenClient(t, d.url, "s3cret").Get(ctx, KeyPrefix+"forever")
	if err != nil {
		t.Fatal(err)
	}
	st := obj.Value.Status
	if st.Phase != Backoff || st.Attempts != 1 || !strings.Contains(st.Message, "stopped by the daemon") || st.NextAttemptAt.IsZero() {
		t.Errorf("after the shutdown: %+v; want Backoff after 1 attempt, stopped by the daemon, next attempt scheduled", st)
	}
	if n := countStarts(taskLog, "forever"); n != 1 {
		t.Errorf("the command ran %d times; want 1", n)
	}
	// Without the token the store refuses.
	if _, err := tokenClient(t, d.url, "").Get(ctx, KeyPrefix+"forever"); err == nil {
		t.Error("the daemon served a request without its token")
	}
}

// startCmd starts "jobs args..." (a copy of the test binary) with env
// added, its output to out, and returns the channel of its Wait's error. It
// is killed when the test ends.
func startCmd(t *testing.T, out io.Writer, env []string, args ...string) <-chan error {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), exe, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	return done
}

// tokenClient returns a client of the store at url sending token (none if
// empty), closed when the test ends.
func tokenClient(t *testing.T, url, token string) *httpstore.Client[*Job] {
	t.Helper()
	var opts []httpstore.ClientOption
	if token != "" {
		opts = append(opts, httpstore.WithToken(token))
	}
	c, err := httpstore.New[*Job](url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
