package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
			d.kill()
		}
	}()
	taskLog := filepath.Join(dir, "tasks.log")
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	run := exec.CommandContext(runCtx, exe, "run", "-dir", dir, "-retries", "1", "forever", "--", exe, taskArg, taskLog, "forever", "hang")
	run.Env = append(os.Environ(), env...)
	var runOut syncbuf.Buffer
	run.Stdout, run.Stderr = &runOut, &runOut
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	runDone := make(chan error, 1)
	go func() { runDone <- run.Wait() }()

	c, err := httpstore.New[*Job](d.url, httpstore.WithToken("s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var pid int
	err = until(ctx, time.Minute, 20*time.Millisecond, "forever running", func() (bool, error) {
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
	if err := d.stop(time.Minute); err != nil {
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
	c2, err := httpstore.New[*Job](d.url, httpstore.WithToken("s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	obj, err := c2.Get(ctx, KeyPrefix+"forever")
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
	anon, err := httpstore.New[*Job](d.url)
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	if _, err := anon.Get(ctx, KeyPrefix+"forever"); err == nil {
		t.Error("the daemon served a request without its token")
	}
}
